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
//! frame for (the language's feed lost, or its encoder restarting) is written as
//! silence — silent AAC frames of the rendition's own configuration over the span —
//! never skipped, so every rendition of the stream has the same MSNs and discontinuity
//! numbers (players match an audio rendition to the video by them) and a player that
//! picked the language plays on through the absence, hearing nothing.
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

/// The most silent frames one segment of an audio rendition gets (85 s at 48 kHz).
const MAX_SILENT_FRAMES: usize = 4096;

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
    /// Segments an audio rendition wrote for spans it had no frame for (silence).
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
    /// An audio rendition's newest frame: the template of the silence its empty spans get.
    last_audio: Option<bytes::Bytes>,
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
        if self.audio_only {
            self.last_audio = Some(frame.data.clone());
        }
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
    /// discontinuities; silence when the rendition had no frame for the span (empty, a
    /// gap, when its frames give no silent frame). Before its first frame, or while a
    /// start's partial first segments settle, nothing is written.
    fn write_audio(&mut self, mut pending: Pending) -> Option<RungSegment> {
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
        self.fill_with_silence(&mut pending);
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

impl RungCutter {
    /// Fills what an audio rendition's span has no frames for with silent frames made
    /// from its newest frame's header: the whole span when it is empty; before its
    /// first frame and after its last when the feed came or went within the span (on
    /// the audio's sample grid, ending where the frames begin and starting where they
    /// end, so no hole of a frame or more is left for a player to stall at). Nothing
    /// when there is no frame to take them from or its channel layout has no silent
    /// frame.
    fn fill_with_silence(&self, pending: &mut Pending) {
        let Some(template) = &self.last_audio else {
            return;
        };
        let (Some(silent), Ok(config)) = (
            crate::codec::aac_silence::silent_adts_frame(template),
            crate::codec::aac::AudioSpecificConfig::from_adts(template),
        ) else {
            return;
        };
        let silent = bytes::Bytes::from(silent);
        let rate = config.sample_rate();
        let frame_ticks = crate::codec::aac_silence::frames_later(0, 1, rate).max(1);
        let start = pending.source.start_ts;
        let end = pending.end();
        let first = pending.frames.iter().map(|t| t.ext_pts).min();
        let last = pending.frames.iter().map(|t| t.ext_pts).max();
        let mut fill = Vec::new();
        match (first, last) {
            (Some(first), Some(last)) => {
                // Back from the first frame, whole frames only, down to the span's start.
                fill.extend(crate::codec::aac_silence::silent_frames_before(
                    &silent,
                    rate,
                    start,
                    first,
                    MAX_SILENT_FRAMES,
                ));
                // On from the last frame's end, whole frames that end within the span.
                let after = last.saturating_add(frame_ticks);
                let bound = end.saturating_sub(frame_ticks).saturating_add(1);
                fill.extend(crate::codec::aac_silence::silent_frames(
                    &silent,
                    rate,
                    after,
                    bound,
                    MAX_SILENT_FRAMES,
                ));
            }
            _ => fill.extend(crate::codec::aac_silence::silent_frames(
                &silent,
                rate,
                start,
                end,
                MAX_SILENT_FRAMES,
            )),
        }
        for (ts, frame) in fill {
            pending.take(Timed {
                ext_pts: ts,
                ext_dts: ts,
                frame,
            });
        }
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
mod tests;
