//! Source mode: this node decides the cuts from the source's timestamps (see the
//! parent module for the rule).

use std::collections::VecDeque;

use super::replay::{RecentFrames, Standby, Verdict};
use super::segment::{
    unwrap_ts, Output, Placements, SegmenterConfig, SegmenterStats, Timed, MAX_DATE_AHEAD_MS,
    MAX_SEGMENT_FRAMES,
};
use super::tail;
use crate::timeline::{TimelineMarker, TimelineState};
use crate::{Frame, TrackKind, CLOCK_HZ};

/// A backward step larger than this (1 s) is a jump, not jitter.
const MAX_BACKWARD: u64 = CLOCK_HZ;
/// How far video may run past a boundary before the previous segment is written
/// without waiting longer for its audio (1 s).
const AUDIO_WAIT: u64 = CLOCK_HZ;
/// Audio held while waiting for the first video frame before the stream is taken as
/// audio-only, and the longest span of audio held while waiting for a keyframe.
const WAIT_SPAN: u64 = CLOCK_HZ;
/// Frame durations assumed until two frames of a track have been seen.
const DEFAULT_VIDEO_DELTA: u64 = 3_600;
const DEFAULT_AUDIO_DELTA: u64 = 1_920;
/// After a discontinuity dates continue from the previous segment's end unless the
/// wall clock has run further ahead than this (1 s): an input away for longer (a
/// publisher reconnecting) is dated by the wall clock, so PDT stays true.
const MAX_GAP_KEPT_MS: i64 = 1_000;
/// The most audio frames held while no segment is open.
const MAX_WAIT_AUDIO: usize = 512;

/// The segment being built.
#[derive(Debug)]
struct Open {
    state: TimelineState,
    discontinuous: bool,
    keyframe_start: bool,
    start_ts: u64,
    start_dts: u64,
    start_grid: u64,
    /// Opened after a wait (first segment, or after a discontinuity): it has no
    /// predecessor to give earlier audio to.
    after_wait: bool,
    frames: Vec<Timed>,
}

/// Per-track clock bookkeeping for jump detection.
#[derive(Debug, Default, Clone, Copy)]
struct TrackClock {
    last_dts: Option<u64>,
    delta: Option<u64>,
    /// The last two frame durations were equal (exact timestamps, no rounding).
    steady: bool,
    /// The track had frames before the last jump and has not yet rejoined the timeline.
    stale: bool,
}

#[derive(Debug)]
pub(super) struct Source {
    cfg: SegmenterConfig,
    /// Template of the next segment's state (MSN, sequence, anchor, counters, tracks).
    next: TimelineState,
    /// No segment opened yet: the next one sets MSN from the grid and the anchor.
    first: bool,
    /// The next segment follows a discontinuity.
    pending_disc: bool,
    /// Wall-clock end of the last written segment, for re-anchoring.
    last_end_unix_ms: Option<i64>,
    /// After a takeover: media presented before this extended timestamp is in the
    /// segments already (until a jump starts a new period).
    resume_at: Option<u64>,
    /// A standby that took over, while its replayed frames are judged and dropped.
    standby: Option<Standby>,
    /// The frames taken last, to recognise a standby's replay of them.
    recent: RecentFrames,
    /// The latest presentation timestamp taken so far.
    newest_pts: Option<u64>,
    last_ext: Option<u64>,
    epoch_ref: Option<u64>,
    clocks: [TrackClock; 2],
    last_video_dts: Option<u64>,
    has_video: bool,
    has_audio: bool,
    cur: Option<Open>,
    closing: Option<Open>,
    /// Audio whose segment is not decided yet (video has not passed it).
    audio_queue: VecDeque<Timed>,
    /// Audio held while no segment is open, with its arrival wall clock.
    wait_audio: VecDeque<(Timed, i64)>,
    /// The last audio frame taken since the timeline last broke: where silence
    /// continues the audio if the video runs on past it ([`tail::silence`]).
    last_audio: Option<Timed>,
    /// What was placed, for the live relay (when kept).
    pub(super) placed: Placements,
}

/// Appends a frame to the segment of `msn` unless it is full.
fn push_bounded(
    frames: &mut Vec<Timed>,
    t: Timed,
    msn: u64,
    placed: &mut Placements,
    stats: &mut SegmenterStats,
) {
    if frames.len() < MAX_SEGMENT_FRAMES {
        placed.frame(msn, &t.frame);
        frames.push(t);
    } else {
        stats.dropped_overflow += 1;
    }
}

fn track_index(kind: TrackKind) -> usize {
    match kind {
        TrackKind::Video => 0,
        TrackKind::Audio => 1,
    }
}

impl Source {
    pub(super) fn fresh(cfg: SegmenterConfig, min_msn: u64, min_disc: u64) -> Self {
        let next = TimelineState {
            msn: min_msn,
            discontinuity_seq: min_disc,
            ..TimelineState::default()
        };
        Self::with_state(cfg, next, true, None, None)
    }

    /// Continues a timeline adopted from upstream markers after the markers stopped:
    /// the followed timeline ended at `end` (extended timestamp, date); media before it
    /// is already in the followed segments and is dropped.
    pub(super) fn continuing(
        cfg: SegmenterConfig,
        next: TimelineState,
        last_ext: Option<u64>,
        end: (u64, i64),
        replay: bool,
    ) -> Self {
        let mut source = Self::with_state(cfg, next, false, last_ext, Some(end.1));
        source.resume_at = replay.then_some(end.0);
        // The new media is checked against where the followed stream ended: a source
        // whose clock restarted (a publisher that reconnected) is a jump, so it starts
        // a new discontinuity period instead of being dated from the old anchor.
        for clock in &mut source.clocks {
            clock.last_dts = last_ext;
        }
        source
    }

    fn with_state(
        cfg: SegmenterConfig,
        next: TimelineState,
        first: bool,
        last_ext: Option<u64>,
        last_end_unix_ms: Option<i64>,
    ) -> Self {
        Self {
            cfg,
            next,
            first,
            pending_disc: false,
            last_end_unix_ms,
            resume_at: None,
            standby: None,
            recent: RecentFrames::default(),
            newest_pts: None,
            last_ext,
            epoch_ref: None,
            clocks: [TrackClock::default(); 2],
            last_video_dts: None,
            has_video: false,
            has_audio: false,
            cur: None,
            closing: None,
            audio_queue: VecDeque::new(),
            wait_audio: VecDeque::new(),
            last_audio: None,
            placed: Placements::default(),
        }
    }

    pub(super) fn state(&self) -> TimelineState {
        self.cur.as_ref().map_or(self.next, |c| c.state)
    }

    pub(super) fn push(
        &mut self,
        frame: Frame,
        now: i64,
        ready: &mut Output,
        stats: &mut SegmenterStats,
    ) {
        let ext_dts = unwrap_ts(frame.dts, self.last_ext);
        let ext_pts = unwrap_ts(frame.pts, Some(ext_dts));
        if ext_pts.saturating_add(MAX_BACKWARD) < ext_dts
            || ext_pts.saturating_sub(ext_dts) > self.cfg.max_segment_ticks()
        {
            stats.dropped_bad_pts += 1;
            return;
        }
        let kind = frame.kind();
        let t = Timed {
            ext_pts,
            ext_dts,
            frame,
        };
        let replay_span = 2 * self.cfg.longest_segment_ticks();
        if let Some(standby) = self.standby {
            let idx = track_index(kind);
            let already = standby.already(idx, t.ext_dts);
            let verdict = if standby.same {
                Verdict::Same
            } else {
                let too_old = standby.too_old(idx, t.ext_dts, replay_span);
                self.recent.judge(t.ext_pts, &t.frame, already, too_old)
            };
            match verdict {
                // Another output of the same encoder: the timeline goes on, and what
                // was taken before the takeover is not taken twice.
                Verdict::Same if already => {
                    self.standby = Some(Standby {
                        same: true,
                        ..standby
                    });
                    stats.dropped_late += 1;
                    return;
                }
                Verdict::Same => {
                    self.standby = Some(Standby {
                        same: true,
                        ..standby
                    })
                }
                Verdict::Undecided => {
                    stats.dropped_late += 1;
                    return;
                }
                Verdict::Different => {
                    let newest = self.newest_pts;
                    self.discontinuity(ready, stats);
                    self.resume_at = newest.map(|pts| pts.saturating_add(1));
                }
            }
        }
        // After a takeover: media shortly before where the stream was (a standby's
        // replayed GOPs) is in the segments already. Much older media is another
        // clock, which the jump check below handles.
        if self.resume_at.is_some_and(|resume| {
            t.ext_pts < resume && t.ext_pts.saturating_add(replay_span) >= resume
        }) {
            stats.dropped_late += 1;
            return;
        }
        if !self.check_clock(kind, ext_dts, ready, stats) {
            stats.dropped_stale += 1;
            return;
        }
        self.newest_pts = Some(self.newest_pts.map_or(ext_pts, |n| n.max(ext_pts)));
        self.last_ext = Some(ext_dts);
        self.recent.taken(ext_pts, &t.frame);
        match kind {
            TrackKind::Video => {
                self.has_video = true;
                self.push_video(t, now, ready, stats);
            }
            TrackKind::Audio => {
                self.has_audio = true;
                self.last_audio = Some(t.clone());
                self.push_audio(t, now, ready, stats);
            }
        }
    }

    /// Jump detection. Returns false when the frame belongs to a stale timeline.
    fn check_clock(
        &mut self,
        kind: TrackKind,
        ext_dts: u64,
        ready: &mut Output,
        stats: &mut SegmenterStats,
    ) -> bool {
        let idx = track_index(kind);
        let forward = 10 * self.cfg.target_ticks();
        let far = |reference: u64| {
            ext_dts > reference.saturating_add(forward)
                || ext_dts.saturating_add(MAX_BACKWARD) < reference
        };
        match self.clocks[idx].last_dts {
            Some(prev) if far(prev) => {
                stats.jumps += 1;
                self.break_timeline(ready, stats);
                for (i, c) in self.clocks.iter_mut().enumerate() {
                    c.stale = i != idx && c.last_dts.is_some();
                    c.last_dts = None;
                }
                self.epoch_ref = Some(ext_dts);
            }
            Some(prev) => {
                if ext_dts > prev {
                    let clock = &mut self.clocks[idx];
                    clock.steady = clock.delta == Some(ext_dts - prev);
                    clock.delta = Some(ext_dts - prev);
                }
            }
            None => {
                if self.clocks[idx].stale {
                    if self.epoch_ref.is_some_and(far) {
                        return false;
                    }
                    self.clocks[idx].stale = false;
                }
            }
        }
        self.clocks[idx].last_dts = Some(ext_dts);
        true
    }

    fn push_video(&mut self, t: Timed, now: i64, ready: &mut Output, stats: &mut SegmenterStats) {
        self.last_video_dts = Some(self.last_video_dts.map_or(t.ext_dts, |d| d.max(t.ext_dts)));
        let Some(cur) = &self.cur else {
            if t.frame.keyframe {
                let start_pts = t.ext_pts;
                self.open(t, now, true, stats);
                // Audio held while waiting: keep what is presented from the keyframe on.
                for (a, _) in std::mem::take(&mut self.wait_audio) {
                    if a.ext_pts >= start_pts {
                        self.audio_queue.push_back(a);
                    } else {
                        stats.dropped_before_keyframe += 1;
                    }
                }
                self.decide(stats);
            } else {
                stats.dropped_before_keyframe += 1;
            }
            return;
        };
        let grid = t.ext_pts / self.cfg.target_ticks();
        let later = t.ext_pts > cur.start_ts;
        let natural = t.frame.keyframe && grid > cur.start_grid && later;
        let forced = !natural
            && later
            && t.ext_dts >= cur.start_dts.saturating_add(self.cfg.max_segment_ticks());
        if natural || forced {
            if forced {
                stats.forced_cuts += 1;
            }
            self.cut(t, now, ready, stats);
        } else if let Some(cur) = &mut self.cur {
            push_bounded(&mut cur.frames, t, cur.state.msn, &mut self.placed, stats);
        }
        self.decide(stats);
        self.maybe_seal_closing(false, ready, stats);
    }

    fn push_audio(&mut self, t: Timed, now: i64, ready: &mut Output, stats: &mut SegmenterStats) {
        let Some(cur) = &self.cur else {
            self.wait_audio.push_back((t, now));
            self.trim_wait_audio(stats);
            if !self.has_video {
                self.maybe_start_audio_only(ready, stats);
            }
            return;
        };
        if self.has_video {
            // Audio is complete up to the cut once the next frame is due at or after it:
            // the segment closes as soon as its last audio frame arrives, not a frame
            // (often a whole multi-frame PES) later. While frame durations vary by a
            // tick (rounded 44.1 kHz timestamps) one tick of slack keeps this safe.
            let clock = self.clocks[1];
            let delta = clock.delta.unwrap_or(DEFAULT_AUDIO_DELTA);
            let next_at_least = if clock.steady {
                delta
            } else {
                delta.saturating_sub(1)
            };
            let passed = t.ext_pts.saturating_add(next_at_least) >= cur.start_ts;
            self.audio_queue.push_back(t);
            self.decide(stats);
            self.maybe_seal_closing(passed, ready, stats);
            return;
        }
        // Audio-only: every frame is a random access point; cut on grid lines.
        let grid = t.ext_pts / self.cfg.target_ticks();
        if grid > cur.start_grid && t.ext_pts > cur.start_ts {
            self.cut(t, now, ready, stats);
        } else if t.ext_pts < cur.start_ts && cur.after_wait {
            stats.dropped_before_keyframe += 1;
        } else if t.ext_pts < cur.start_ts {
            stats.dropped_late += 1;
        } else if let Some(cur) = &mut self.cur {
            push_bounded(&mut cur.frames, t, cur.state.msn, &mut self.placed, stats);
        }
    }

    fn trim_wait_audio(&mut self, stats: &mut SegmenterStats) {
        while self.wait_audio.len() > MAX_WAIT_AUDIO {
            self.wait_audio.pop_front();
            stats.dropped_before_keyframe += 1;
        }
        while let (Some((front, _)), Some((back, _))) =
            (self.wait_audio.front(), self.wait_audio.back())
        {
            if back.ext_pts.saturating_sub(front.ext_pts) <= WAIT_SPAN || self.wait_audio.len() < 2
            {
                break;
            }
            if !self.has_video {
                break;
            }
            self.wait_audio.pop_front();
            stats.dropped_before_keyframe += 1;
        }
    }

    /// No video after a second of audio: the stream is audio-only; start at the first
    /// held frame.
    fn maybe_start_audio_only(&mut self, ready: &mut Output, stats: &mut SegmenterStats) {
        let span = match (self.wait_audio.front(), self.wait_audio.back()) {
            (Some((f, _)), Some((b, _))) => b.ext_pts.saturating_sub(f.ext_pts),
            _ => return,
        };
        if span < WAIT_SPAN {
            return;
        }
        self.start_audio_only(ready, stats);
    }

    fn start_audio_only(&mut self, ready: &mut Output, stats: &mut SegmenterStats) {
        let mut held = std::mem::take(&mut self.wait_audio).into_iter();
        let Some((first, first_now)) = held.next() else {
            return;
        };
        self.open(first, first_now, true, stats);
        for (t, now) in held {
            self.push_audio(t, now, ready, stats);
        }
    }

    /// Opens a segment at `t`.
    fn open(&mut self, t: Timed, now: i64, after_wait: bool, stats: &mut SegmenterStats) {
        let grid = t.ext_pts / self.cfg.target_ticks();
        let mut state = self.next;
        let mut discontinuous = false;
        if !self.first
            && !self.pending_disc
            && state.unix_ms_at(t.ext_pts) > now.saturating_add(MAX_DATE_AHEAD_MS)
        {
            // Dates running ahead of the wall clock: anchored again, after a break.
            stats.untimed += 1;
            self.pending_disc = true;
            self.last_end_unix_ms = Some(now);
        }
        if self.first {
            state.msn = state.msn.max(grid);
            state.anchor_ts = t.ext_pts;
            state.anchor_unix_ms = now;
            self.first = false;
        } else if self.pending_disc {
            state.discontinuity_seq = state.discontinuity_seq.saturating_add(1);
            state.anchor_ts = t.ext_pts;
            // Dates continue from the previous segment's end, never too far ahead; after
            // an outage (a publisher that came back) they are the wall clock's again.
            let end = self.last_end_unix_ms.unwrap_or(now);
            let resumed = if now > end.saturating_add(MAX_GAP_KEPT_MS) {
                now
            } else {
                end
            };
            state.anchor_unix_ms = resumed.min(now.saturating_add(MAX_DATE_AHEAD_MS));
            discontinuous = true;
        }
        self.pending_disc = false;
        state.wraps = t.ext_pts >> 33;
        self.next = state;
        self.next.msn = state.msn.saturating_add(1);
        let video = t.frame.kind() == TrackKind::Video;
        self.placed.opened(TimelineMarker {
            state,
            discontinuous,
            keyframe_start: t.frame.keyframe,
            start_ts: t.ext_pts,
            duration_ticks: 0,
            program_date_time_ms: state.unix_ms_at(t.ext_pts),
            target_duration_ms: self.cfg.target_duration_ms,
            video_frames: u32::from(video),
            audio_frames: u32::from(!video),
        });
        self.placed.frame(state.msn, &t.frame);
        self.cur = Some(Open {
            state,
            discontinuous,
            keyframe_start: t.frame.keyframe,
            start_ts: t.ext_pts,
            start_dts: t.ext_dts,
            start_grid: grid,
            after_wait,
            frames: vec![t],
        });
    }

    /// Ends the current segment at `t`, which starts the next one.
    fn cut(&mut self, t: Timed, now: i64, ready: &mut Output, stats: &mut SegmenterStats) {
        let span = self
            .cur
            .as_ref()
            .map_or(0, |cur| t.ext_pts.saturating_sub(cur.start_ts));
        if span > self.cfg.longest_segment_ticks() {
            // No segment can last that long: the timeline breaks here, and `t` starts
            // the next one if it can start a segment at all.
            stats.untimed += 1;
            self.break_timeline(ready, stats);
            match t.frame.kind() {
                TrackKind::Video => self.push_video(t, now, ready, stats),
                TrackKind::Audio => self.push_audio(t, now, ready, stats),
            }
            return;
        }
        if self.closing.is_some() {
            self.seal_closing(ready, stats);
        }
        let previous = self.cur.take();
        self.open(t, now, false, stats);
        self.closing = previous;
        if !(self.has_video && self.has_audio) {
            self.seal_closing(ready, stats);
        }
    }

    /// Places every queued audio frame whose segment is known.
    fn decide(&mut self, stats: &mut SegmenterStats) {
        let Some(cur) = &mut self.cur else {
            return;
        };
        while let Some(a) = self.audio_queue.front() {
            let p = a.ext_pts;
            // Video has passed it — or video stalled while audio ran a whole maximum
            // segment ahead (bounds the queue; still a function of the timestamps).
            let newest = self.audio_queue.back().map_or(p, |b| b.ext_pts);
            let passed_by_video = self.last_video_dts.is_some_and(|d| p < d)
                || newest.saturating_sub(p) > self.cfg.max_segment_ticks()
                || self.audio_queue.len() > MAX_SEGMENT_FRAMES;
            if p >= cur.start_ts && !passed_by_video {
                break;
            }
            let Some(a) = self.audio_queue.pop_front() else {
                break;
            };
            if p >= cur.start_ts {
                push_bounded(&mut cur.frames, a, cur.state.msn, &mut self.placed, stats);
            } else if let Some(c) = self.closing.as_mut().filter(|c| p >= c.start_ts) {
                push_bounded(&mut c.frames, a, c.state.msn, &mut self.placed, stats);
            } else if cur.after_wait && self.closing.is_none() {
                stats.dropped_before_keyframe += 1;
            } else {
                stats.dropped_late += 1;
            }
        }
    }

    fn maybe_seal_closing(
        &mut self,
        audio_passed: bool,
        ready: &mut Output,
        stats: &mut SegmenterStats,
    ) {
        let (Some(_), Some(cur)) = (&self.closing, &self.cur) else {
            return;
        };
        let video_passed = self
            .last_video_dts
            .is_some_and(|d| d >= cur.start_ts.saturating_add(AUDIO_WAIT));
        if audio_passed || video_passed || !self.has_audio {
            self.seal_closing(ready, stats);
        }
    }

    /// Writes the segment waiting for late audio; its end is the open segment's start.
    fn seal_closing(&mut self, ready: &mut Output, stats: &mut SegmenterStats) {
        self.decide(stats);
        let Some(closing) = self.closing.take() else {
            return;
        };
        let end = self.cur.as_ref().map_or(closing.start_ts, |c| c.start_ts);
        self.seal(closing, end, ready);
    }

    fn seal(&mut self, open: Open, end_ts: u64, ready: &mut Output) {
        let mut state = open.state;
        state.tracks = state
            .tracks
            .with_frames(open.frames.iter().map(|t| &t.frame));
        let (video, audio) =
            open.frames
                .iter()
                .fold((0u32, 0u32), |(v, a), t| match t.frame.kind() {
                    TrackKind::Video => (v + 1, a),
                    TrackKind::Audio => (v, a + 1),
                });
        let duration = end_ts.saturating_sub(open.start_ts);
        let marker = TimelineMarker {
            state,
            discontinuous: open.discontinuous,
            keyframe_start: open.keyframe_start,
            start_ts: open.start_ts,
            duration_ticks: duration,
            program_date_time_ms: state.unix_ms_at(open.start_ts),
            target_duration_ms: self.cfg.target_duration_ms,
            video_frames: video,
            audio_frames: audio,
        };
        let cc = ready.write(&marker, open.frames, false);
        self.last_end_unix_ms = Some(state.unix_ms_at(end_ts));
        // The successor (if open) and the template both continue from here.
        if let Some(cur) = &mut self.cur {
            cur.state.cc = cc;
            cur.state.tracks = state.tracks;
        }
        self.next.cc = cc;
        self.next.tracks = state.tracks;
    }

    /// The end of the open segment when no successor tells it: the latest frame end.
    fn estimated_end(&self, open: &Open) -> u64 {
        open.frames
            .iter()
            .map(|t| {
                let delta = match t.frame.kind() {
                    TrackKind::Video => self.clocks[0].delta.unwrap_or(DEFAULT_VIDEO_DELTA),
                    TrackKind::Audio => self.clocks[1].delta.unwrap_or(DEFAULT_AUDIO_DELTA),
                };
                t.ext_pts.saturating_add(delta)
            })
            .max()
            .unwrap_or(open.start_ts)
            .min(
                open.start_ts
                    .saturating_add(self.cfg.longest_segment_ticks()),
            )
    }

    /// Writes everything open, deciding queued audio by the known boundaries.
    fn seal_all(&mut self, ready: &mut Output, stats: &mut SegmenterStats) {
        if self.cur.is_none() && !self.has_video {
            self.start_audio_only(ready, stats);
        }
        let mut end = None;
        if self.cur.is_some() {
            // Nothing more will arrive: every queued frame is decided now.
            self.last_video_dts = Some(u64::MAX);
            self.decide(stats);
            end = self.cur.as_ref().map(|cur| self.estimated_end(cur));
        }
        if let Some(end) = end {
            self.fill_audio_tail(end, stats);
        }
        self.seal_closing(ready, stats);
        if let (Some(cur), Some(end)) = (self.cur.take(), end) {
            self.seal(cur, end, ready);
        }
        self.last_audio = None;
        self.audio_queue.clear();
        stats.dropped_before_keyframe += self.wait_audio.len() as u64;
        self.wait_audio.clear();
        self.last_video_dts = None;
    }

    /// The audio ended before the video (an input that stopped with its audio behind,
    /// as muxers send it): silent frames continue it to `end`, the open segment's end,
    /// in the open segments, so no segment ends with video and no audio under it.
    fn fill_audio_tail(&mut self, end: u64, stats: &mut SegmenterStats) {
        let (Some(last), Some(cur), true) = (&self.last_audio, &mut self.cur, self.has_video)
        else {
            return;
        };
        let from = self.closing.as_ref().map_or(cur.start_ts, |c| c.start_ts);
        for t in tail::silence(last, from, end, MAX_SEGMENT_FRAMES) {
            stats.silence_filled += 1;
            match self.closing.as_mut().filter(|_| t.ext_pts < cur.start_ts) {
                Some(c) => push_bounded(&mut c.frames, t, c.state.msn, &mut self.placed, stats),
                None => push_bounded(&mut cur.frames, t, cur.state.msn, &mut self.placed, stats),
            }
        }
    }

    /// Closes the timeline: what follows starts a new, discontinuous segment.
    fn break_timeline(&mut self, ready: &mut Output, stats: &mut SegmenterStats) {
        self.seal_all(ready, stats);
        self.resume_at = None;
        self.standby = None;
        self.recent.clear();
        if !self.first {
            self.pending_disc = true;
        }
    }

    pub(super) fn discontinuity(&mut self, ready: &mut Output, stats: &mut SegmenterStats) {
        self.break_timeline(ready, stats);
        self.clocks = [TrackClock::default(); 2];
        self.epoch_ref = None;
    }

    /// A standby took over and replays its recent GOPs. Its first frames decide
    /// ([`RecentFrames::judge`]): the frames already segmented, byte for byte (one
    /// encoder's second output), and the open segment goes on with no discontinuity;
    /// anything else starts a new period. Either way, what was already segmented is
    /// dropped.
    pub(super) fn takeover(&mut self, ready: &mut Output, stats: &mut SegmenterStats) {
        if self.first || self.newest_pts.is_none() {
            let newest = self.newest_pts;
            self.discontinuity(ready, stats);
            self.resume_at = newest.map(|pts| pts.saturating_add(1));
            return;
        }
        self.standby = Some(Standby {
            last_dts: [self.clocks[0].last_dts, self.clocks[1].last_dts],
            same: false,
        });
    }

    /// Writes everything open; returns the last extended timestamp seen.
    pub(super) fn flush(&mut self, ready: &mut Output, stats: &mut SegmenterStats) -> Option<u64> {
        self.seal_all(ready, stats);
        self.last_ext
    }
}
