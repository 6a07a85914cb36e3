//! Adopt mode: the upstream's timeline markers decide every cut.
//!
//! Each marker announces where its segment starts (the PTS of its first frame, of
//! the leading track: video, or audio when the segment has no video), how long it is,
//! and how many video and audio frames it holds. Video frames go to the oldest started
//! segment that still lacks video; audio frames to the segment whose time range holds
//! their PTS. A segment is written once all its frames are in, with the marker's state,
//! so its bytes are the upstream's bytes — regardless of how the demuxer orders the
//! frames of the two tracks.
//!
//! The live relay sends an *open* marker instead, before the upstream knows the
//! segment's length, and its frames as they are placed ([`crate::timeline`]): an open
//! segment takes every video frame until the next segment starts and the audio from
//! its start up to the next start, and is written when its *close* marker (the whole
//! marker, after its frames) arrives.

use std::collections::VecDeque;

use super::segment::{
    unwrap_ts, Output, Placements, SegmenterConfig, SegmenterStats, Timed, MAX_SEGMENT_FRAMES,
};

/// The most adopted markers waiting for their frames; older ones are written as they are.
const MAX_PENDING_MARKERS: usize = 8;

/// How far after an audio-led segment's start its first frame may be: more than one AAC
/// frame at any rate brdyun takes (1024 samples at 11.025 kHz is 8,359 ticks).
const AUDIO_START_SLACK: u64 = 9_000;
use crate::timeline::{MarkerPhase, TimelineMarker, TimelineState};
use crate::{Frame, TrackKind};

/// One adopted marker and the frames collected for it.
#[derive(Debug)]
struct Followed {
    marker: TimelineMarker,
    /// Announced by an open marker whose close has not come: length and counts unknown.
    open: bool,
    started: bool,
    video: u32,
    audio: u32,
    frames: Vec<Timed>,
}

impl Followed {
    /// Whether a frame of `kind` at `ext_pts` is the first of this segment's leading
    /// track: a picture at exactly the marker's start; an audio frame at the start or
    /// within [`AUDIO_START_SLACK`] after it (an audio rendition of another language is
    /// cut on the video's spans, its first frame within one audio frame of their start).
    fn starts_with(&self, kind: TrackKind, ext_pts: u64) -> bool {
        if self.started || self.lead() != kind {
            return false;
        }
        let start = self.marker.start_ts;
        match kind {
            TrackKind::Video => ext_pts == start,
            TrackKind::Audio => ext_pts >= start && ext_pts - start < AUDIO_START_SLACK,
        }
    }

    /// A whole marker counting no frame, of a stream without video: an audio
    /// rendition's span its feed had nothing for, written as it is (an empty segment,
    /// listed as a gap), at once. A stream with video never has one.
    fn is_gap(&self) -> bool {
        let m = &self.marker;
        !self.open && m.video_frames == 0 && m.audio_frames == 0 && m.state.tracks.video.is_none()
    }

    fn lead(&self) -> TrackKind {
        if self.marker.video_frames > 0 {
            TrackKind::Video
        } else {
            TrackKind::Audio
        }
    }

    fn complete(&self) -> bool {
        self.started
            && !self.open
            && self.video >= self.marker.video_frames
            && self.audio >= self.marker.audio_frames
    }

    /// The same segment as `marker` announces (whatever its phase).
    fn is(&self, marker: &TimelineMarker) -> bool {
        let (a, b) = (&self.marker, marker);
        a.state.msn == b.state.msn
            && a.state.discontinuity_seq == b.state.discontinuity_seq
            && a.start_ts == b.start_ts
    }

    /// Whether a frame of `kind` presented at `ext_pts` may still join (an open
    /// segment's end is where the next one starts, which the caller checks).
    fn wants(&self, kind: TrackKind, ext_pts: u64) -> bool {
        let m = &self.marker;
        if self.open {
            return ext_pts >= m.start_ts;
        }
        match kind {
            TrackKind::Video => self.video < m.video_frames,
            TrackKind::Audio => {
                ext_pts >= m.start_ts
                    && ext_pts < m.start_ts.saturating_add(m.duration_ticks)
                    && self.audio < m.audio_frames
            }
        }
    }

    /// Adds a frame; false when the segment is full.
    fn take(&mut self, t: Timed, placed: &mut Placements, stats: &mut SegmenterStats) {
        if self.frames.len() >= MAX_SEGMENT_FRAMES {
            stats.dropped_overflow += 1;
            return;
        }
        match t.frame.kind() {
            TrackKind::Video => self.video += 1,
            TrackKind::Audio => self.audio += 1,
        }
        placed.frame(self.marker.state.msn, &t.frame);
        self.frames.push(t);
    }

    /// Starts collecting afresh for `marker` in `phase`.
    fn restart(&mut self, marker: TimelineMarker, phase: MarkerPhase) {
        self.marker = marker;
        self.open = phase == MarkerPhase::Open;
        self.started = false;
        self.video = 0;
        self.audio = 0;
        self.frames.clear();
    }

    /// The end of an open segment written without its close marker (the upstream went
    /// away mid-segment): `next_start` when a segment follows, else the latest frame
    /// end. Its bytes can no longer be the upstream's.
    fn close_estimated(&mut self, next_start: Option<u64>) {
        let newest = self.frames.iter().map(|t| t.ext_pts).max();
        let end = next_start
            .or(newest.map(|p| p.saturating_add(1)))
            .unwrap_or(self.marker.start_ts);
        self.marker.duration_ticks = end.saturating_sub(self.marker.start_ts);
        self.marker.video_frames = self.video;
        self.marker.audio_frames = self.audio;
        self.open = false;
    }
}

/// What a follower hands back when the markers stopped and source mode must continue:
/// the frame that showed it, the next state, the clock reference, where the followed
/// timeline ended (timestamp, date), and whether the new input replays the same
/// source's recent GOPs (a takeover).
pub(super) type Fallback = (Frame, TimelineState, Option<u64>, (u64, i64), bool);

#[derive(Debug)]
pub(super) struct Follow {
    cfg: SegmenterConfig,
    segs: VecDeque<Followed>,
    last_ext: Option<u64>,
    /// State after the last written segment, with its end (timestamp, wall clock).
    next: Option<(TimelineState, u64, i64)>,
    /// The input changed under the stream and no marker came since: media without a
    /// marker now is a source of its own (a publisher taking over from a dead
    /// upstream), carried on at once rather than after a longest segment.
    input_changed: bool,
    /// The change was a takeover by a standby of the same source, which replays its
    /// recent GOPs.
    replaying: bool,
    /// The last marker was of a segment already written or complete (a replay): its
    /// frames are dropped until the next marker.
    skipping: bool,
    /// What was placed, for the live relay (when kept).
    pub(super) placed: Placements,
}

impl Follow {
    pub(super) fn new(cfg: SegmenterConfig) -> Self {
        Self {
            cfg,
            segs: VecDeque::new(),
            last_ext: None,
            next: None,
            input_changed: false,
            replaying: false,
            skipping: false,
            placed: Placements::default(),
        }
    }

    /// The input changed (a backup took over, the input reconnected). A relay always
    /// resumes with a marker, which keeps following; anything else is carried on in
    /// source mode from the followed state as soon as it arrives.
    ///
    /// `takeover`: the new input is a standby of the same source that replays its
    /// recent GOPs, some of them already followed.
    pub(super) fn input_changed(&mut self, takeover: bool) {
        self.input_changed = true;
        self.replaying = takeover;
    }

    pub(super) fn set_reference(&mut self, ext: Option<u64>) {
        self.last_ext = ext;
    }

    pub(super) fn state(&self) -> Option<TimelineState> {
        self.segs
            .front()
            .map(|s| s.marker.state)
            .or(self.next.map(|(s, _, _)| s))
    }

    pub(super) fn push_marker(
        &mut self,
        phase: MarkerPhase,
        marker: TimelineMarker,
        ready: &mut Output,
        stats: &mut SegmenterStats,
    ) {
        if phase == MarkerPhase::Close {
            // The open segment's length and counts: it is written once its frames are in.
            if let Some(s) = self.segs.iter_mut().find(|s| s.open && s.is(&marker)) {
                s.marker = marker;
                s.open = false;
                s.started |= s.is_gap();
            }
            self.emit_complete(ready, stats);
            return;
        }
        self.input_changed = false;
        self.replaying = false;
        // Re-anchor the clock on the marker: its start is authoritative.
        self.last_ext = Some(marker.start_ts);
        // A repeated marker (a relay restarted, or a standby relay replaying the segment
        // in flight) replaces nothing — except a segment cut short, whose frames come
        // again from its start: it is collected afresh.
        self.skipping = false;
        if let Some(seen) = self.segs.iter_mut().find(|s| s.is(&marker)) {
            if seen.complete() {
                self.skipping = true;
            } else {
                seen.restart(marker, phase);
                self.placed.opened(marker);
            }
            return;
        }
        // Markers of segments already written are old news, and so are their frames.
        if self.next.is_some_and(|(s, _, _)| marker.state.msn < s.msn) {
            self.skipping = true;
            return;
        }
        self.placed.opened(marker);
        let mut followed = Followed {
            marker,
            open: phase == MarkerPhase::Open,
            started: false,
            video: 0,
            audio: 0,
            frames: Vec::new(),
        };
        followed.started = followed.is_gap();
        self.segs.push_back(followed);
        while self.segs.len() > MAX_PENDING_MARKERS {
            self.emit_front(ready, stats);
        }
        self.emit_complete(ready, stats);
    }

    pub(super) fn push(
        &mut self,
        frame: Frame,
        ready: &mut Output,
        stats: &mut SegmenterStats,
    ) -> Option<Fallback> {
        let ext_dts = unwrap_ts(frame.dts, self.last_ext);
        let ext_pts = unwrap_ts(frame.pts, Some(ext_dts));
        let kind = frame.kind();
        let t = Timed {
            ext_pts,
            ext_dts,
            frame,
        };
        if self.skipping {
            stats.dropped_unmatched += 1;
            return None;
        }
        if self.input_changed && self.next.is_some() {
            if self.replaying {
                // The new input replays the same source: a segment cut short is cut
                // again from it, whole.
                self.rewind_to_incomplete(ready, stats);
            } else {
                // What was followed is written as it is; this input starts where it ended.
                self.flush(ready, stats);
            }
        }
        if self.segs.is_empty() {
            if let Some((state, end_ts, end_unix)) = self.next {
                if self.input_changed
                    || ext_dts >= end_ts.saturating_add(self.cfg.max_segment_ticks())
                {
                    // The upstream stopped marking its stream: carry on from its state.
                    let replay = self.input_changed && self.replaying;
                    return Some((t.frame, state, self.last_ext, (end_ts, end_unix), replay));
                }
            }
            stats.dropped_unmatched += 1;
            return None;
        }
        self.last_ext = Some(ext_dts);
        let starts = self.segs.iter().position(|s| s.starts_with(kind, ext_pts));
        if let Some(i) = starts {
            // Earlier segments can get no more frames of the leading track: whole ones
            // are written now; open ones when their close marker comes.
            for s in self.segs.iter_mut().take(i + 1) {
                s.started = true;
            }
            if let Some(s) = self.segs.get_mut(i) {
                s.take(t, &mut self.placed, stats);
            }
        } else {
            // A frame joins the latest segment started at or before it (video: the
            // latest started; audio: by its presentation time) while that one wants it.
            let target = self.segs.iter_mut().rev().find(|s| match kind {
                TrackKind::Video => s.started,
                TrackKind::Audio => s.marker.start_ts <= ext_pts,
            });
            match target {
                Some(s) if s.wants(kind, ext_pts) => s.take(t, &mut self.placed, stats),
                _ => stats.dropped_unmatched += 1,
            }
        }
        self.emit_complete(ready, stats);
        None
    }

    /// Writes the segments at the front that are done: complete, or whole and passed by
    /// a later segment's start (they can get no more frames of the leading track; an
    /// open one waits for its close marker).
    fn emit_complete(&mut self, ready: &mut Output, stats: &mut SegmenterStats) {
        while let Some(front) = self.segs.front() {
            let passed = !front.open && self.segs.iter().skip(1).any(|s| s.started);
            if !(front.complete() || passed) {
                break;
            }
            self.emit_front(ready, stats);
        }
    }

    /// Writes the oldest followed segment (complete or not) if it started.
    fn emit_front(&mut self, ready: &mut Output, stats: &mut SegmenterStats) {
        let Some(s) = self.segs.pop_front() else {
            return;
        };
        if !s.started {
            stats.dropped_unmatched += s.frames.len() as u64;
            return;
        }
        let mut s = s;
        if s.open {
            let next_start = self.segs.front().map(|n| n.marker.start_ts);
            s.close_estimated(next_start);
            stats.incomplete += 1;
        } else if !s.complete() {
            stats.incomplete += 1;
        }
        let marker = s.marker;
        let cc = ready.write(&marker, s.frames, true);
        let mut state = marker.state;
        state.msn = state.msn.saturating_add(1);
        state.cc = cc;
        let end_ts = marker.start_ts.saturating_add(marker.duration_ticks);
        self.next = Some((state, end_ts, marker.state.unix_ms_at(end_ts)));
    }

    /// Writes the complete segments; the first incomplete one (and any after it) is
    /// dropped and the timeline continues from its start, so a source replaying it
    /// cuts it whole, with the same state.
    fn rewind_to_incomplete(&mut self, ready: &mut Output, stats: &mut SegmenterStats) {
        self.emit_complete(ready, stats);
        if let Some(first) = self.segs.front() {
            let marker = first.marker;
            self.next = Some((marker.state, marker.start_ts, marker.program_date_time_ms));
        }
        for dropped in self.segs.drain(..) {
            stats.dropped_unmatched += dropped.frames.len() as u64;
        }
    }

    pub(super) fn flush(&mut self, ready: &mut Output, stats: &mut SegmenterStats) {
        while !self.segs.is_empty() {
            self.emit_front(ready, stats);
        }
    }
}
