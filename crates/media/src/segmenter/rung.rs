//! A ladder rung cut on its source's timeline: the source's segmenter decides every
//! boundary, and each rung segment takes the source segment's MSN, start, duration and
//! date, with the rung's frames whose PTS fall in that span.
//!
//! An encoder that keeps the source's timestamps and forces a keyframe wherever the
//! source has one (`ffmpeg -copyts -force_key_frames source`) gives rungs whose every
//! segment starts with a keyframe at exactly the source segment's start PTS: the rungs
//! are then switchable at every segment boundary, the condition of an ABR ladder. The
//! cutter checks that condition segment by segment ([`RungSegment::aligned`]) instead of
//! assuming it, so an encoder or a publisher that breaks it is reported.
//!
//! Audio is the rung's own ([`RungCutter::source_segment`]: a publisher's ladder whose
//! rungs each carry audio) or the source's, shared ([`RungCutter::source_segment_sharing`]:
//! an encoder that makes video only; every rung then carries the source's very audio
//! frames, and its own audio, if any, is ignored).
//!
//! An audio rendition ([`RungCutter::audio_rendition`]: another language of the
//! meeting) is a rung of audio alone: each segment holds the rendition's audio frames
//! whose PTS fall in the source segment's span, and is written once a frame beyond that
//! span has arrived (a language's frame count need not be the floor's). It is aligned
//! when its first frame starts within one audio frame of the source segment's start.
//! Its discontinuities are the source's, exactly: once it has started, a span it has no
//! frame for (the language's feed lost, or its encoder restarting) is written as an
//! empty segment — a gap, its marker counting no frame — never skipped, so every
//! rendition of the stream has the same MSNs and discontinuity numbers (players match
//! an audio rendition to the video by them).
//!
//! A rung segment is written once its frames are all in (the rung has as many frames of
//! each track as the source segment: a frame-rate-preserving encoder), or once frames of
//! both tracks beyond its end have arrived (an encoder that dropped or added frames).
//! A source segment the rung has no frame for (the encoder was down) is skipped: the
//! next rung segment follows a discontinuity, with the rung's discontinuity sequence one
//! ahead of the source's from then on.

use std::collections::VecDeque;

use super::segment::{emit, unwrap_ts, Segment, Timed, MAX_SEGMENT_FRAMES};
use crate::timeline::{ContinuityCounters, TimelineMarker, Tracks};
use crate::{Frame, TrackKind};

/// The most source segments waiting for rung frames; older ones are written as they are
/// (or skipped when the rung has nothing for them).
const MAX_PENDING: usize = 16;

/// The most source segments an audio rendition waits on: its frames come in step with
/// the source's (one input), so a span this far behind the newest is written with what
/// it has — a gap when the language's feed is lost — and the language stays within a
/// few segments of the video.
const MAX_PENDING_AUDIO: usize = 3;

/// After a (re)start, this many misaligned segments are skipped, not written: an
/// encoder fed from the middle of a source segment makes a partial first segment.
const SETTLING_SEGMENTS: u8 = 2;

/// A source MSN this far below the rung's newest means the source was numbered afresh
/// (not a segment fed again).
const RENUMBERED: u64 = 1000;

/// The most rung frames held ahead of the source segments announced so far.
const MAX_EARLY_FRAMES: usize = 4096;

/// The most frames an audio rendition holds ahead of the announced source segments:
/// about 11 s of 48 kHz AAC (a language is cut from the source's own stream, in step
/// with it; what runs further ahead is a source's damage, not worth the memory).
const MAX_EARLY_AUDIO_FRAMES: usize = 512;

/// One finished rung segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RungSegment {
    /// The segment, with the source segment's MSN, start, duration and date.
    pub segment: Segment,
    /// The segment starts with a video keyframe at the source segment's start PTS (or,
    /// when the source segment has no video, the rung has none either): a player can
    /// switch between this rung and the source's other rungs here.
    pub aligned: bool,
    /// The marker the segment's bytes start with (the rung's own counters and frame counts).
    pub marker: TimelineMarker,
}

/// What a rung cutter did, for monitoring.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RungStats {
    /// Segments written.
    pub segments: u64,
    /// Segments written that do not start on the source segment's keyframe.
    pub misaligned: u64,
    /// Source segments the rung had no frame for (skipped).
    pub skipped: u64,
    /// Segments written with a frame count that differs from the source segment's.
    pub count_mismatch: u64,
    /// Frames older than every source segment still waiting (late, or of a skipped one).
    pub dropped_late: u64,
    /// Frames dropped because too many were ahead of the announced source segments.
    pub dropped_early: u64,
    /// Empty segments an audio rendition wrote for spans it had no frame for.
    pub gaps: u64,
}

/// One announced source segment and the rung frames collected for it.
#[derive(Debug)]
struct Pending {
    source: TimelineMarker,
    frames: Vec<Timed>,
    video: u32,
    audio: u32,
    /// A rung frame of this kind beyond the segment's end has arrived.
    video_passed: bool,
    audio_passed: bool,
    /// The rung is audio alone: only its own audio completes the segment.
    audio_only: bool,
}

impl Pending {
    fn end(&self) -> u64 {
        self.source
            .start_ts
            .saturating_add(self.source.duration_ticks)
    }

    fn holds(&self, ext_pts: u64) -> bool {
        ext_pts >= self.source.start_ts && ext_pts < self.end()
    }

    fn complete(&self) -> bool {
        if self.audio_only {
            return self.audio_passed;
        }
        let counted =
            self.video >= self.source.video_frames && self.audio >= self.source.audio_frames;
        let video_done = self.video_passed || self.source.video_frames == 0;
        let audio_done = self.audio_passed || self.source.audio_frames == 0;
        counted || (video_done && audio_done)
    }

    fn take(&mut self, timed: Timed) {
        if self.frames.len() >= MAX_SEGMENT_FRAMES {
            return;
        }
        match timed.frame.kind() {
            TrackKind::Video => self.video += 1,
            TrackKind::Audio => self.audio += 1,
        }
        self.frames.push(timed);
    }
}

/// Cuts one rung on its source's segments; see the module docs.
#[derive(Debug, Default)]
pub struct RungCutter {
    pending: VecDeque<Pending>,
    early: VecDeque<Timed>,
    cc: ContinuityCounters,
    tracks: Tracks,
    reference: Option<u64>,
    last_msn: Option<u64>,
    /// Discontinuities the rung has that the source has not (skipped spans).
    extra_discontinuities: u64,
    restarted: bool,
    /// Misaligned segments still skipped as the partial first ones of a (re)start.
    settling: u8,
    /// The rung's audio is the source's, given with each source segment.
    shares_audio: bool,
    /// The rung is an audio rendition: audio alone, its video ignored.
    audio_only: bool,
    stats: RungStats,
}

impl RungCutter {
    /// A cutter that has seen nothing.
    pub fn new() -> Self {
        Self {
            settling: SETTLING_SEGMENTS,
            ..Self::default()
        }
    }

    /// A cutter for an audio rendition (another language) on the source's segments;
    /// see the module docs.
    pub fn audio_rendition() -> Self {
        Self {
            audio_only: true,
            ..Self::new()
        }
    }

    /// Counters since creation.
    pub fn stats(&self) -> RungStats {
        self.stats
    }

    /// The source cut a segment (`marker` as its bytes carry it): the rung segment with
    /// the same MSN covers the same span. Returns the rung segments this completes.
    pub fn source_segment(&mut self, marker: TimelineMarker) -> Vec<RungSegment> {
        self.announce(marker, None)
    }

    /// [`RungCutter::source_segment`] for a rung whose audio is the source's: `audio`
    /// is the source segment's audio frames, which the rung segment carries as they are
    /// (the rung's own audio frames are ignored from now on).
    pub fn source_segment_sharing(
        &mut self,
        marker: TimelineMarker,
        audio: Vec<Frame>,
    ) -> Vec<RungSegment> {
        self.shares_audio = true;
        self.announce(marker, Some(audio))
    }

    fn announce(&mut self, marker: TimelineMarker, audio: Option<Vec<Frame>>) -> Vec<RungSegment> {
        let msn = marker.state.msn;
        if self
            .last_msn
            .is_some_and(|last| msn <= last && last - msn < RENUMBERED)
        {
            // A segment this rung already has (fed again to a restarted encoder).
            return Vec::new();
        }
        if self
            .pending
            .back()
            .is_some_and(|p| marker.state.msn <= p.source.state.msn)
        {
            // The source started afresh: what waits for the old numbering is dropped.
            self.stats.skipped += self.pending.len() as u64;
            self.pending.clear();
            self.restarted = true;
        }
        self.reference.get_or_insert(marker.start_ts);
        let mut pending = Pending {
            source: marker,
            frames: Vec::new(),
            video: 0,
            audio: 0,
            video_passed: false,
            audio_passed: false,
            audio_only: self.audio_only,
        };
        if let Some(audio) = audio {
            // The source's own audio: all of it is in, whatever the encoder does.
            pending.audio_passed = true;
            for frame in audio.into_iter().filter(|f| f.kind() == TrackKind::Audio) {
                let ext_pts = unwrap_ts(frame.pts, Some(marker.start_ts));
                let ext_dts = unwrap_ts(frame.dts, Some(ext_pts));
                pending.take(Timed {
                    ext_pts,
                    ext_dts,
                    frame,
                });
            }
            pending.source.audio_frames = pending.audio;
        }
        self.pending.push_back(pending);
        let early = std::mem::take(&mut self.early);
        for timed in early {
            self.place(timed);
        }
        let mut out = self.ready();
        let most = if self.audio_only {
            MAX_PENDING_AUDIO
        } else {
            MAX_PENDING
        };
        while self.pending.len() > most {
            if let Some(oldest) = self.pending.pop_front() {
                out.extend(self.write(oldest));
            }
        }
        out
    }

    /// One frame of the rung, in the encoder's output order. Returns the rung segments
    /// this completes.
    pub fn frame(&mut self, frame: Frame) -> Vec<RungSegment> {
        let ignored = match frame.kind() {
            TrackKind::Audio => self.shares_audio,
            TrackKind::Video => self.audio_only,
        };
        if ignored {
            return Vec::new();
        }
        let ext_pts = unwrap_ts(frame.pts, self.reference);
        let ext_dts = unwrap_ts(frame.dts, Some(ext_pts));
        self.reference = Some(ext_pts);
        self.place(Timed {
            ext_pts,
            ext_dts,
            frame,
        });
        self.ready()
    }

    /// The encoder restarted: the frames collected so far are dropped (their segments
    /// are skipped), and the next segment written follows a discontinuity.
    pub fn restart(&mut self) {
        for pending in &mut self.pending {
            if self.shares_audio {
                pending
                    .frames
                    .retain(|t| t.frame.kind() == TrackKind::Audio);
            } else {
                pending.frames.clear();
                pending.audio = 0;
            }
            pending.video = 0;
        }
        self.early.clear();
        self.restarted = true;
        self.settling = SETTLING_SEGMENTS;
    }

    /// Writes every segment still waiting (end of input), in order.
    pub fn flush(&mut self) -> Vec<RungSegment> {
        let mut out = Vec::new();
        while let Some(oldest) = self.pending.pop_front() {
            out.extend(self.write(oldest));
        }
        out
    }

    fn place(&mut self, timed: Timed) {
        let kind = timed.frame.kind();
        for pending in &mut self.pending {
            if timed.ext_pts >= pending.end() {
                match kind {
                    TrackKind::Video => pending.video_passed = true,
                    TrackKind::Audio => pending.audio_passed = true,
                }
            }
        }
        if let Some(pending) = self.pending.iter_mut().find(|p| p.holds(timed.ext_pts)) {
            pending.take(timed);
            return;
        }
        let ahead = self
            .pending
            .back()
            .is_none_or(|newest| timed.ext_pts >= newest.end());
        if ahead {
            let most = if self.audio_only {
                MAX_EARLY_AUDIO_FRAMES
            } else {
                MAX_EARLY_FRAMES
            };
            if self.early.len() >= most {
                self.early.pop_front();
                self.stats.dropped_early += 1;
            }
            self.early.push_back(timed);
        } else {
            self.stats.dropped_late += 1;
        }
    }

    fn ready(&mut self) -> Vec<RungSegment> {
        let mut out = Vec::new();
        while self.pending.front().is_some_and(Pending::complete) {
            if let Some(oldest) = self.pending.pop_front() {
                out.extend(self.write(oldest));
            }
        }
        out
    }

    fn write(&mut self, pending: Pending) -> Option<RungSegment> {
        if self.audio_only {
            return self.write_audio(pending);
        }
        let source = pending.source;
        if pending.video == 0 && (self.shares_audio || pending.frames.is_empty()) {
            self.stats.skipped += 1;
            return None;
        }
        let first_video = pending
            .frames
            .iter()
            .filter(|t| t.frame.kind() == TrackKind::Video)
            .min_by_key(|t| t.ext_dts);
        let aligned = match first_video {
            Some(t) => t.frame.keyframe && t.ext_pts == source.start_ts,
            None => source.video_frames == 0,
        };
        if aligned {
            self.settling = 0;
        } else if self.settling > 0 {
            self.settling -= 1;
            self.stats.skipped += 1;
            return None;
        }
        let gap = self
            .last_msn
            .is_some_and(|last| source.state.msn != last.saturating_add(1));
        let discontinuous = source.discontinuous || std::mem::take(&mut self.restarted) || gap;
        if discontinuous && !source.discontinuous {
            self.extra_discontinuities += 1;
        }
        self.last_msn = Some(source.state.msn);
        self.tracks = self
            .tracks
            .with_frames(pending.frames.iter().map(|t| &t.frame));
        // Downstream, a rung segment's marker says "starts on a keyframe" only when it
        // is aligned: a node checks a rung's switchability from its markers alone.
        let keyframe_start = aligned;
        let mut marker = source;
        marker.state.cc = self.cc;
        marker.state.tracks = self.tracks;
        marker.state.discontinuity_seq = source
            .state
            .discontinuity_seq
            .saturating_add(self.extra_discontinuities);
        marker.discontinuous = discontinuous;
        marker.keyframe_start = keyframe_start;
        marker.video_frames = pending.video;
        marker.audio_frames = pending.audio;
        if pending.video != source.video_frames || pending.audio != source.audio_frames {
            self.stats.count_mismatch += 1;
        }
        let (segment, cc) = emit(&marker, pending.frames, None);
        self.cc = cc;
        self.stats.segments += 1;
        if !aligned {
            self.stats.misaligned += 1;
        }
        Some(RungSegment {
            segment,
            aligned,
            marker,
        })
    }
}

impl RungCutter {
    /// Writes an audio rendition's segment: on the source's MSN, span, date and
    /// discontinuities; empty (a gap) when the rendition had no frame for the span.
    /// Before its first frame, or while a start's partial first segments settle, nothing
    /// is written.
    fn write_audio(&mut self, pending: Pending) -> Option<RungSegment> {
        let source = pending.source;
        let gap = pending.frames.is_empty();
        let aligned = gap || starts_within_a_frame(&pending.frames, source.start_ts);
        let started = self.last_msn.is_some();
        if !started && (gap || (!aligned && self.settling > 0)) {
            self.settling = self.settling.saturating_sub(1);
            self.stats.skipped += 1;
            return None;
        }
        self.last_msn = Some(source.state.msn);
        self.tracks = self
            .tracks
            .with_frames(pending.frames.iter().map(|t| &t.frame));
        let mut marker = source;
        marker.state.cc = self.cc;
        marker.state.tracks = self.tracks;
        marker.keyframe_start = true;
        marker.video_frames = 0;
        marker.audio_frames = pending.audio;
        let (segment, cc) = emit(&marker, pending.frames, None);
        self.cc = cc;
        self.stats.segments += 1;
        if gap {
            self.stats.gaps += 1;
        } else if !aligned {
            self.stats.misaligned += 1;
        }
        Some(RungSegment {
            segment,
            aligned,
            marker,
        })
    }
}

/// The first of these audio frames starts within one frame's duration of `start`: an
/// audio rendition's segment then covers the source segment's span from its start.
fn starts_within_a_frame(frames: &[Timed], start: u64) -> bool {
    let Some(first) = frames.iter().min_by_key(|t| t.ext_pts) else {
        return false;
    };
    let frame_ticks = crate::codec::aac::AudioSpecificConfig::from_adts(&first.frame.data)
        .ok()
        .map(|c| u64::from(c.sample_rate()))
        .filter(|&rate| rate > 0)
        .map_or(crate::CLOCK_HZ / 10, |rate| {
            crate::codec::aac::SAMPLES_PER_FRAME * crate::CLOCK_HZ / rate
        });
    first.ext_pts.saturating_sub(start) < frame_ticks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::TimelineState;
    use crate::Codec;
    use bytes::Bytes;

    const SECOND: u64 = 90_000;
    const FRAME: u64 = 3600;

    fn marker(msn: u64, start: u64, duration: u64, video: u32, audio: u32) -> TimelineMarker {
        TimelineMarker {
            state: TimelineState {
                msn,
                anchor_ts: 0,
                anchor_unix_ms: 1_700_000_000_000,
                ..TimelineState::default()
            },
            discontinuous: false,
            keyframe_start: true,
            start_ts: start,
            duration_ticks: duration,
            program_date_time_ms: 1_700_000_000_000 + i64::try_from(start / 90).unwrap_or(0),
            target_duration_ms: 2000,
            video_frames: video,
            audio_frames: audio,
        }
    }

    fn video(pts: u64, key: bool) -> Frame {
        Frame {
            codec: Codec::H264,
            pts,
            dts: pts,
            keyframe: key,
            data: Bytes::from_static(&[0, 0, 0, 1, 0x65, 0x88]),
        }
    }

    fn audio(pts: u64) -> Frame {
        Frame {
            codec: Codec::Aac,
            pts,
            dts: pts,
            keyframe: true,
            data: Bytes::from_static(&[0xff, 0xf1, 0x50, 0x80, 0x01, 0x7f, 0xfc, 0x21]),
        }
    }

    /// The frames of a 2-s segment starting at `start`: 50 video frames (a keyframe
    /// first unless `key` is false) and 2 audio frames.
    fn frames(start: u64, key: bool) -> Vec<Frame> {
        let mut out: Vec<Frame> = (0..50)
            .map(|i| video(start + i * FRAME, i == 0 && key))
            .collect();
        out.push(audio(start));
        out.push(audio(start + SECOND));
        out
    }

    #[test]
    fn a_rung_takes_the_source_segments_numbers_dates_and_spans() {
        let mut cutter = RungCutter::new();
        let mut out = Vec::new();
        for msn in 0..3 {
            let start = 10 * SECOND + msn * 2 * SECOND;
            out.extend(cutter.source_segment(marker(msn, start, 2 * SECOND, 50, 2)));
            for f in frames(start, true) {
                out.extend(cutter.frame(f));
            }
        }
        assert_eq!(
            out.len(),
            3,
            "each segment is written once its frames are in"
        );
        for (i, rung) in out.iter().enumerate() {
            let msn = i as u64;
            let start = 10 * SECOND + msn * 2 * SECOND;
            assert_eq!(rung.segment.msn, msn);
            assert_eq!(rung.segment.start_ts, start);
            assert_eq!(rung.segment.duration_ticks, 2 * SECOND);
            assert_eq!(
                rung.segment.program_date_time_ms,
                marker(msn, start, 2 * SECOND, 50, 2).program_date_time_ms
            );
            assert!(rung.aligned && !rung.segment.discontinuous);
            let parsed = TimelineMarker::parse(&rung.segment.data[4..188]).expect("marker");
            assert_eq!(parsed, rung.marker, "the bytes carry the rung's marker");
        }
        assert_eq!(cutter.stats().misaligned, 0);
        assert_ne!(
            out[1].marker.state.cc, out[0].marker.state.cc,
            "each segment starts where the previous one's counters ended"
        );
    }

    #[test]
    fn frames_that_come_before_their_source_segment_wait_for_it() {
        let mut cutter = RungCutter::new();
        assert!(cutter
            .source_segment(marker(7, 0, 2 * SECOND, 50, 2))
            .is_empty());
        let mut out = Vec::new();
        for f in frames(0, true).into_iter().chain(frames(2 * SECOND, true)) {
            out.extend(cutter.frame(f));
        }
        assert_eq!(out.len(), 1);
        out.extend(cutter.source_segment(marker(8, 2 * SECOND, 2 * SECOND, 50, 2)));
        assert_eq!(out.len(), 2);
        assert_eq!(out[1].segment.msn, 8);
        assert!(out[1].aligned);
    }

    #[test]
    fn a_rung_that_does_not_start_on_the_keyframe_is_misaligned() {
        let mut cutter = RungCutter::new();
        let mut out = cutter.source_segment(marker(0, 0, 2 * SECOND, 50, 2));
        for f in frames(0, true) {
            out.extend(cutter.frame(f));
        }
        out.extend(cutter.source_segment(marker(1, 2 * SECOND, 2 * SECOND, 50, 2)));
        for f in frames(2 * SECOND, false) {
            out.extend(cutter.frame(f));
        }
        assert_eq!(out.len(), 2);
        assert!(out[0].aligned && !out[1].aligned);
        assert!(!out[1].marker.keyframe_start);
        assert_eq!(cutter.stats().misaligned, 1);
    }

    #[test]
    fn the_partial_first_segments_of_a_start_are_skipped_not_reported() {
        let mut cutter = RungCutter::new();
        let mut out = Vec::new();
        for msn in 0..4 {
            let start = msn * 2 * SECOND;
            out.extend(cutter.source_segment(marker(msn, start, 2 * SECOND, 50, 2)));
            // The encoder started mid-segment: the first two begin without a keyframe.
            for f in frames(start, msn >= 2) {
                out.extend(cutter.frame(f));
            }
        }
        let msns: Vec<u64> = out.iter().map(|r| r.segment.msn).collect();
        assert_eq!(msns, vec![2, 3]);
        assert_eq!(cutter.stats().misaligned, 0);
        assert_eq!(cutter.stats().skipped, 2);
    }

    #[test]
    fn an_encoder_that_drops_frames_is_cut_when_later_frames_arrive() {
        let mut cutter = RungCutter::new();
        let mut out = cutter.source_segment(marker(0, 0, 2 * SECOND, 50, 2));
        for f in frames(0, true) {
            out.extend(cutter.frame(f));
        }
        let start = 2 * SECOND;
        out.extend(cutter.source_segment(marker(1, start, 2 * SECOND, 50, 2)));
        out.extend(cutter.source_segment(marker(2, 2 * start, 2 * SECOND, 50, 2)));
        for f in frames(start, true)
            .into_iter()
            .filter(|f| f.pts != start || f.kind() == TrackKind::Audio)
        {
            out.extend(cutter.frame(f));
        }
        assert_eq!(out.len(), 1, "still waiting: nothing beyond the end yet");
        out.extend(cutter.frame(video(2 * start, true)));
        out.extend(cutter.frame(audio(2 * start)));
        assert_eq!(out.len(), 2);
        assert!(!out[1].aligned, "the first keyframe was dropped");
        assert_eq!(cutter.stats().count_mismatch, 1);
    }

    #[test]
    fn a_restarted_encoder_skips_the_lost_span_and_marks_a_discontinuity() {
        let mut cutter = RungCutter::new();
        let mut out = Vec::new();
        out.extend(cutter.source_segment(marker(0, 0, 2 * SECOND, 50, 2)));
        for f in frames(0, true) {
            out.extend(cutter.frame(f));
        }
        // Segment 1 is fed, half encoded, then the encoder dies.
        out.extend(cutter.source_segment(marker(1, 2 * SECOND, 2 * SECOND, 50, 2)));
        for f in frames(2 * SECOND, true).into_iter().take(20) {
            out.extend(cutter.frame(f));
        }
        cutter.restart();
        // The new encoder starts at segment 3.
        out.extend(cutter.source_segment(marker(2, 4 * SECOND, 2 * SECOND, 50, 2)));
        out.extend(cutter.source_segment(marker(3, 6 * SECOND, 2 * SECOND, 50, 2)));
        for f in frames(6 * SECOND, true) {
            out.extend(cutter.frame(f));
        }
        let msns: Vec<u64> = out.iter().map(|r| r.segment.msn).collect();
        assert_eq!(msns, vec![0, 3]);
        assert!(out[1].segment.discontinuous);
        assert_eq!(
            out[1].segment.discontinuity_seq, 1,
            "one ahead of the source's"
        );
        assert_eq!(cutter.stats().skipped, 2);
        assert!(out[1].aligned);
    }

    #[test]
    fn a_segment_fed_again_after_a_restart_is_not_written_twice() {
        let mut cutter = RungCutter::new();
        let mut out = cutter.source_segment(marker(0, 0, 2 * SECOND, 50, 2));
        for f in frames(0, true) {
            out.extend(cutter.frame(f));
        }
        cutter.restart();
        out.extend(cutter.source_segment(marker(0, 0, 2 * SECOND, 50, 2)));
        for f in frames(0, true) {
            out.extend(cutter.frame(f));
        }
        out.extend(cutter.source_segment(marker(1, 2 * SECOND, 2 * SECOND, 50, 2)));
        for f in frames(2 * SECOND, true) {
            out.extend(cutter.frame(f));
        }
        let msns: Vec<u64> = out.iter().map(|r| r.segment.msn).collect();
        assert_eq!(msns, vec![0, 1]);
        assert!(
            out[1].segment.discontinuous,
            "the new encoder's first segment"
        );
    }

    #[test]
    fn a_rung_sharing_the_sources_audio_carries_it_and_needs_only_its_video() {
        let mut cutter = RungCutter::new();
        let source_audio = vec![audio(0), audio(SECOND)];
        let mut out = cutter.source_segment_sharing(marker(0, 0, 2 * SECOND, 50, 2), source_audio);
        for f in frames(0, true)
            .into_iter()
            .filter(|f| f.kind() == TrackKind::Video)
        {
            out.extend(cutter.frame(f));
        }
        assert_eq!(out.len(), 1, "complete with its last video frame");
        assert_eq!(out[0].marker.audio_frames, 2);
        // The encoder's own audio is ignored; a segment the encoder never made is
        // skipped even though the source's audio is there.
        out.extend(cutter.frame(audio(2 * SECOND)));
        out.extend(cutter.source_segment_sharing(
            marker(1, 2 * SECOND, 2 * SECOND, 50, 2),
            vec![audio(2 * SECOND)],
        ));
        out.extend(cutter.source_segment_sharing(
            marker(2, 4 * SECOND, 2 * SECOND, 50, 2),
            vec![audio(4 * SECOND)],
        ));
        for f in frames(4 * SECOND, true)
            .into_iter()
            .filter(|f| f.kind() == TrackKind::Video)
        {
            out.extend(cutter.frame(f));
        }
        let msns: Vec<u64> = out.iter().map(|r| r.segment.msn).collect();
        assert_eq!(msns, vec![0, 2]);
        assert_eq!(out[1].marker.audio_frames, 1);
        assert!(out[1].segment.discontinuous);
    }

    #[test]
    fn late_frames_are_dropped_and_counted() {
        let mut cutter = RungCutter::new();
        cutter.source_segment(marker(0, 2 * SECOND, 2 * SECOND, 50, 2));
        cutter.frame(video(SECOND, true));
        assert_eq!(cutter.stats().dropped_late, 1);
    }

    /// 44.1 kHz AAC frames (the test ADTS header's rate) are 2089.8 ticks apart.
    const AAC_FRAME: u64 = 1024 * SECOND / 44_100;

    /// The language's audio frames from `from` up to `to` (exclusive), back to back.
    fn language(from: u64, to: u64) -> Vec<Frame> {
        (0..)
            .map(|i| from + i * 1024 * SECOND / 44_100)
            .take_while(|&pts| pts < to)
            .map(audio)
            .collect()
    }

    #[test]
    fn an_audio_rendition_is_cut_on_the_source_spans_by_its_own_audio() {
        let mut cutter = RungCutter::audio_rendition();
        let mut out = Vec::new();
        for msn in 0..3 {
            let start = 10 * SECOND + msn * 2 * SECOND;
            // The floor's counts (50 pictures, 94 audio frames) do not bind the language.
            out.extend(cutter.source_segment(marker(msn, start, 2 * SECOND, 50, 94)));
            // A rendition's video, if its source has any, is ignored.
            out.extend(cutter.frame(video(start, true)));
        }
        for f in language(10 * SECOND, 16 * SECOND + AAC_FRAME) {
            out.extend(cutter.frame(f));
        }
        let msns: Vec<u64> = out.iter().map(|r| r.segment.msn).collect();
        assert_eq!(msns, vec![0, 1, 2], "each written once a later frame came");
        for rung in &out {
            let start = rung.segment.start_ts;
            assert!(rung.aligned && !rung.segment.discontinuous);
            assert_eq!(rung.segment.duration_ticks, 2 * SECOND);
            assert_eq!(rung.marker.video_frames, 0);
            assert_eq!(
                rung.marker.state.tracks.video, None,
                "audio alone in the PMT"
            );
            let frames = crate::ts::demux_frames(&rung.segment.data);
            assert!(frames.iter().all(|f| f.kind() == TrackKind::Audio));
            assert_eq!(frames.len() as u32, rung.marker.audio_frames);
            let first = frames.iter().map(|f| f.pts).min().unwrap();
            assert!(
                first >= start && first < start + AAC_FRAME,
                "{first} vs {start}"
            );
            let last = frames.iter().map(|f| f.pts).max().unwrap();
            assert!(last < start + 2 * SECOND);
        }
        let stats = cutter.stats();
        assert_eq!((stats.misaligned, stats.count_mismatch), (0, 0));
    }

    #[test]
    fn a_language_that_stops_gets_gap_segments_on_the_sources_numbers() {
        let mut cutter = RungCutter::audio_rendition();
        let mut out = Vec::new();
        for msn in 0..4 {
            let start = msn * 2 * SECOND;
            out.extend(cutter.source_segment(marker(msn, start, 2 * SECOND, 50, 94)));
            // The interpreter is silent (no frames) for the third segment's span.
            if msn != 2 {
                for f in language(start, start + 2 * SECOND) {
                    out.extend(cutter.frame(f));
                }
            }
        }
        out.extend(cutter.frame(audio(8 * SECOND + AAC_FRAME)));
        let msns: Vec<u64> = out.iter().map(|r| r.segment.msn).collect();
        assert_eq!(msns, vec![0, 1, 2, 3], "no MSN skipped");
        // The silent span is an empty segment whose marker counts no frame.
        assert_eq!(out[2].marker.audio_frames, 0);
        assert!(crate::ts::demux_frames(&out[2].segment.data).is_empty());
        assert!(out[3].marker.audio_frames > 0);
        // The source's discontinuities, no other.
        assert!(out.iter().all(|r| !r.segment.discontinuous));
        assert!(out.iter().all(|r| r.marker.state.discontinuity_seq == 0));
        assert_eq!(cutter.stats().gaps, 1);
    }

    #[test]
    fn an_audio_rendition_that_starts_mid_segment_is_settled_not_misreported() {
        let mut cutter = RungCutter::audio_rendition();
        let mut out = Vec::new();
        for msn in 0..3 {
            out.extend(cutter.source_segment(marker(msn, msn * 2 * SECOND, 2 * SECOND, 50, 94)));
        }
        // The feed comes half a second into the first segment.
        for f in language(SECOND / 2, 6 * SECOND + AAC_FRAME) {
            out.extend(cutter.frame(f));
        }
        let msns: Vec<u64> = out.iter().map(|r| r.segment.msn).collect();
        assert_eq!(msns, vec![1, 2]);
        assert_eq!(cutter.stats().misaligned, 0);
    }

    #[test]
    fn a_lost_language_is_written_as_gaps_a_few_segments_behind() {
        let mut cutter = RungCutter::audio_rendition();
        let mut out = Vec::new();
        out.extend(cutter.source_segment(marker(0, 0, 2 * SECOND, 50, 94)));
        for f in language(0, 2 * SECOND + AAC_FRAME) {
            out.extend(cutter.frame(f));
        }
        // The feed is lost: no frame comes any more; the video goes on.
        for msn in 1..10 {
            out.extend(cutter.source_segment(marker(msn, msn * 2 * SECOND, 2 * SECOND, 50, 94)));
        }
        let msns: Vec<u64> = out.iter().map(|r| r.segment.msn).collect();
        assert_eq!(msns, (0..=6).collect::<Vec<u64>>(), "at most 3 spans wait");
        // (The frame past the first span, which completed it, is the second's.)
        assert!(out[2..].iter().all(|r| r.marker.audio_frames == 0));
    }
}
