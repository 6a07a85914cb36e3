//! The pure LL-HLS packager of one stream: frames and segmenter decisions in, fMP4
//! parts and segments out, in step with the TS segmenter (the design is in the
//! server's `llhls` module, which owns the window and the blocking reloads). No clock,
//! no I/O: the same frames give the same parts on every node.

use std::collections::VecDeque;

use crate::fmp4::{
    package_ts_segment, segment_frames, write_init, InitConfig, NextDts, Part, PartBuilder,
    ProducerTime, TimedFrame,
};
use crate::{Frame, Segment, TimelineMarker, TimelineState, TrackKind};
use bytes::Bytes;

/// Audio held while video has not passed it: at most this many frames …
const MAX_HELD_AUDIO: usize = 512;
/// … spanning at most this much (90 kHz, 1 s) past the newest video frame.
const MAX_HELD_SPAN: u64 = 90_000;
/// The most segments built at once (the open one, one waiting for its last audio, and
/// slack for a follower that saw several markers).
const MAX_BUILDING: usize = 4;

/// A part as it is published: the bytes of one `moof+mdat` (the first also carries
/// `styp` and `prft`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartOut {
    /// The segment it belongs to.
    pub msn: u64,
    /// Its index in that segment.
    pub index: usize,
    /// Its bytes.
    pub bytes: Bytes,
    /// Primary-track duration, 90 kHz (EXT-X-PART DURATION).
    pub duration_ticks: u64,
    /// Starts with a sync sample (INDEPENDENT=YES).
    pub independent: bool,
}

/// Where a segment's part lies in the segment's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartSpan {
    /// Byte range in the segment.
    pub bytes: std::ops::Range<usize>,
    /// Primary-track duration, 90 kHz.
    pub duration_ticks: u64,
    /// Starts with a sync sample.
    pub independent: bool,
}

/// A complete fMP4 segment: the concatenation of its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentOut {
    /// Media sequence number (the TS segment's).
    pub msn: u64,
    /// Discontinuity sequence number.
    pub discontinuity_seq: u64,
    /// A discontinuity precedes it.
    pub discontinuous: bool,
    /// Duration, 90 kHz (the TS segment's).
    pub duration_ticks: u64,
    /// EXT-X-PROGRAM-DATE-TIME, Unix ms.
    pub program_date_time_ms: i64,
    /// The bytes: `styp`, `prft`, then one `moof+mdat` per part.
    pub bytes: Bytes,
    /// The parts.
    pub parts: Vec<PartSpan>,
    /// True when the parts were cut live as the frames arrived; false when the segment
    /// was packaged from the finished TS segment (its parts appear only now).
    pub live: bool,
    /// The init configuration the bytes were written for (`ll-init-{seq}.mp4`): when
    /// it is the fMP4 view's, these bytes are also that view's muxed file (`seg-`).
    pub config: InitConfig,
}

/// A segment whose parts are being cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened {
    /// Its media sequence number.
    pub msn: u64,
    /// Its discontinuity sequence number.
    pub discontinuity_seq: u64,
    /// A discontinuity precedes it.
    pub discontinuous: bool,
    /// EXT-X-PROGRAM-DATE-TIME of its start, Unix ms.
    pub program_date_time_ms: i64,
}

/// What the packager tells its owner, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// A new init segment for a discontinuity sequence (EXT-X-MAP).
    Init {
        /// The discontinuity sequence it serves.
        discontinuity_seq: u64,
        /// `ftyp` + `moov`.
        bytes: Bytes,
    },
    /// A segment started; its parts follow.
    Opened(Opened),
    /// A part of an opened segment.
    Part(PartOut),
    /// A segment is complete (its parts may have been published before, see `live`).
    Segment(SegmentOut),
}

/// Counters of how segments were made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PackagerStats {
    /// Segments whose live parts matched the TS segment's frames.
    pub live_segments: u64,
    /// Segments packaged from the TS segment because no live parts were cut for them
    /// (start, discontinuity).
    pub packaged_segments: u64,
    /// Segments whose live parts did not hold the TS segment's frames and were replaced.
    pub mismatches: u64,
}

/// One segment being cut into parts.
#[derive(Debug)]
struct Building {
    info: Opened,
    start_pts: u64,
    builder: PartBuilder,
    /// The init config the builder writes for.
    builder_config: InitConfig,
    buf: Vec<u8>,
    parts: Vec<Part>,
    /// (ext DTS, is audio) of every frame given to the builder, for verification.
    assigned: Vec<(u64, bool)>,
    first_video_dts: Option<u64>,
    first_audio_dts: Option<u64>,
    failed: bool,
}

/// A segment an upstream marker announced, not yet started.
#[derive(Debug, Clone, Copy)]
struct Announced {
    marker: TimelineMarker,
}

/// Cuts a stream's frames into LL-HLS parts in step with the TS segmenter; pure state,
/// no clock, no I/O.
#[derive(Debug)]
pub struct Packager {
    part_ticks: u64,
    last_ext: Option<u64>,
    building: VecDeque<Building>,
    announced: VecDeque<Announced>,
    /// Markers were seen: cuts are known from them, not from the segmenter's state.
    following: bool,
    held_audio: VecDeque<TimedFrame>,
    last_video_dts: Option<u64>,
    has_video: bool,
    last_audio: Option<Frame>,
    /// The init config of the current discontinuity sequence.
    init: Option<(u64, InitConfig)>,
    stats: PackagerStats,
}

impl Packager {
    /// A packager cutting parts every `part_ticks` (90 kHz) of the primary track.
    pub fn new(part_ticks: u64) -> Self {
        Self {
            part_ticks: part_ticks.max(1),
            last_ext: None,
            building: VecDeque::new(),
            announced: VecDeque::new(),
            following: false,
            held_audio: VecDeque::new(),
            last_video_dts: None,
            has_video: false,
            last_audio: None,
            init: None,
            stats: PackagerStats::default(),
        }
    }

    /// How segments were made so far.
    pub fn stats(&self) -> PackagerStats {
        self.stats
    }

    /// An upstream timeline marker (the payload the segmenter was given): the segment
    /// it announces starts at the marker's start PTS.
    ///
    /// An open marker (the live relay) announces the same; a close marker only ends a
    /// segment, which the TS segment shows.
    pub fn marker(&mut self, payload: &[u8]) {
        let Ok((phase, marker)) = TimelineMarker::parse_phase(payload) else {
            return;
        };
        if phase == crate::timeline::MarkerPhase::Close {
            return;
        }
        self.following = true;
        self.last_ext = Some(marker.start_ts);
        let known = self.announced.iter().any(|a| {
            a.marker.state.msn == marker.state.msn && a.marker.start_ts == marker.start_ts
        }) || self.building.iter().any(|b| b.info.msn == marker.state.msn);
        if !known {
            self.announced.push_back(Announced { marker });
            while self.announced.len() > MAX_BUILDING * 2 {
                self.announced.pop_front();
            }
        }
    }

    /// The input changed under the stream: what is being built is dropped (the
    /// segments will be packaged from their TS) and the clock reference forgotten.
    pub fn discontinuity(&mut self) {
        for b in &mut self.building {
            b.failed = true;
        }
        self.held_audio.clear();
        self.last_video_dts = None;
    }

    /// A frame the segmenter was just given; `before` and `after` are the segmenter's
    /// [`crate::Segmenter::state`] around that call (a changed MSN on a leading-track
    /// frame means the segmenter opened a segment at it).
    pub fn frame(
        &mut self,
        frame: Frame,
        before: Option<TimelineState>,
        after: Option<TimelineState>,
        out: &mut Vec<Output>,
    ) {
        let reference = self.last_ext.unwrap_or(frame.dts);
        let Some(t) = TimedFrame::unwrap_all([frame], reference).pop() else {
            return;
        };
        self.last_ext = Some(t.ext_dts);
        match t.frame.kind() {
            TrackKind::Video => {
                self.has_video = true;
                self.last_video_dts =
                    Some(self.last_video_dts.map_or(t.ext_dts, |d| d.max(t.ext_dts)));
                if let Some(open) = self.starts_at(&t, before, after) {
                    self.open(open, &t, out);
                }
                self.assign_newest(t, out);
                self.release_audio(false, out);
            }
            TrackKind::Audio => {
                self.last_audio = Some(t.frame.clone());
                if !self.has_video {
                    if let Some(open) = self.starts_at(&t, before, after) {
                        self.open(open, &t, out);
                    }
                }
                self.held_audio.push_back(t);
                self.release_audio(false, out);
            }
        }
    }

    /// The segment that starts at `t`, if any: announced by a marker (follow mode) or
    /// shown by the segmenter's MSN changing on this frame (source mode).
    fn starts_at(
        &mut self,
        t: &TimedFrame,
        before: Option<TimelineState>,
        after: Option<TimelineState>,
    ) -> Option<Opened> {
        if self.following {
            let i = self
                .announced
                .iter()
                .position(|a| a.marker.start_ts == t.ext_pts)?;
            let a = self.announced.remove(i)?;
            // Earlier announcements can no longer start.
            self.announced.drain(..i);
            let m = a.marker;
            return Some(Opened {
                msn: m.state.msn,
                discontinuity_seq: m.state.discontinuity_seq,
                discontinuous: m.discontinuous,
                program_date_time_ms: m.program_date_time_ms,
            });
        }
        let (Some(before), Some(after)) = (before, after) else {
            return None;
        };
        if before.msn == after.msn {
            return None;
        }
        let previous_seq = self
            .building
            .back()
            .map(|b| b.info.discontinuity_seq)
            .or(self.init.as_ref().map(|(seq, _)| *seq))
            .unwrap_or(after.discontinuity_seq);
        Some(Opened {
            msn: after.msn,
            discontinuity_seq: after.discontinuity_seq,
            discontinuous: after.discontinuity_seq != previous_seq,
            program_date_time_ms: after.unix_ms_at(t.ext_pts),
        })
    }

    /// The init config for a segment of `seq` starting at `first`: the sequence's config
    /// if it has one, else read from this frame and the last audio frame.
    fn config_for(&mut self, seq: u64, first: &Frame, out: &mut Vec<Output>) -> Option<InitConfig> {
        if let Some((s, config)) = &self.init {
            if *s == seq {
                return Some(config.clone());
            }
        }
        // The sequence's first init must carry every track: before any audio frame was
        // seen, a stream's audio is unknown, so that segment is packaged from its TS
        // (whose frames show the tracks) instead of being cut live.
        let audio = self.last_audio.as_ref()?;
        let config = InitConfig::from_frames([first, audio]).ok()?;
        self.set_init(seq, config, out)
    }

    /// Makes `config` the sequence's init; `None` when it cannot be written.
    fn set_init(
        &mut self,
        seq: u64,
        config: InitConfig,
        out: &mut Vec<Output>,
    ) -> Option<InitConfig> {
        let mut bytes = Vec::new();
        if let Err(error) = write_init(&config, &mut bytes) {
            tracing::debug!(%error, "ll-hls init segment not written");
            return None;
        }
        out.push(Output::Init {
            discontinuity_seq: seq,
            bytes: Bytes::from(bytes),
        });
        self.init = Some((seq, config.clone()));
        Some(config)
    }

    fn open(&mut self, info: Opened, t: &TimedFrame, out: &mut Vec<Output>) {
        // Audio presented before this start belongs to earlier segments: place it first.
        self.release_audio_before(t.ext_pts, out);
        let Some(config) = self.config_for(info.discontinuity_seq, &t.frame, out) else {
            return;
        };
        let builder = PartBuilder::new(
            config.clone(),
            info.msn,
            self.part_ticks,
            Some(ProducerTime {
                unix_ms: info.program_date_time_ms,
                media_time: t.ext_pts,
            }),
        );
        while self.building.len() >= MAX_BUILDING {
            self.building.pop_front();
        }
        out.push(Output::Opened(info.clone()));
        self.building.push_back(Building {
            info,
            start_pts: t.ext_pts,
            builder,
            builder_config: config,
            buf: Vec::new(),
            parts: Vec::new(),
            assigned: Vec::new(),
            first_video_dts: None,
            first_audio_dts: None,
            failed: false,
        });
    }

    /// Video goes to the newest segment (video arrives in DTS order and a segment's
    /// video ends where the next one's first frame begins).
    fn assign_newest(&mut self, t: TimedFrame, out: &mut Vec<Output>) {
        let Some(i) = self.building.len().checked_sub(1) else {
            return;
        };
        self.give(i, t, out);
    }

    /// Audio goes to the segment with the latest start at or before its PTS, as the
    /// segmenter decides; it is decided once video has passed it (or when `all`).
    fn release_audio(&mut self, all: bool, out: &mut Vec<Output>) {
        while let Some(front) = self.held_audio.front() {
            let p = front.ext_pts;
            let newest = self.held_audio.back().map_or(p, |b| b.ext_pts);
            let decided = all
                || !self.has_video
                || self.last_video_dts.is_some_and(|d| p < d)
                || newest.saturating_sub(p) > MAX_HELD_SPAN
                || self.held_audio.len() > MAX_HELD_AUDIO;
            if !decided {
                break;
            }
            let Some(a) = self.held_audio.pop_front() else {
                break;
            };
            self.place_audio(a, out);
        }
    }

    /// Places held audio presented before `pts` (it cannot belong to a segment that
    /// starts at `pts` or later).
    fn release_audio_before(&mut self, pts: u64, out: &mut Vec<Output>) {
        while self.held_audio.front().is_some_and(|a| a.ext_pts < pts) {
            if let Some(a) = self.held_audio.pop_front() {
                self.place_audio(a, out);
            }
        }
    }

    fn place_audio(&mut self, a: TimedFrame, out: &mut Vec<Output>) {
        let target = self.building.iter().rposition(|b| b.start_pts <= a.ext_pts);
        if let Some(i) = target {
            self.give(i, a, out);
        }
    }

    fn give(&mut self, i: usize, t: TimedFrame, out: &mut Vec<Output>) {
        let Some(b) = self.building.get_mut(i) else {
            return;
        };
        if b.failed {
            return;
        }
        let audio = t.frame.kind() == TrackKind::Audio;
        let slot = if audio {
            &mut b.first_audio_dts
        } else {
            &mut b.first_video_dts
        };
        slot.get_or_insert(t.ext_dts);
        b.assigned.push((t.ext_dts, audio));
        match b.builder.push(t, &mut b.buf) {
            Ok(parts) => {
                for part in parts {
                    out.push(Output::Part(PartOut {
                        msn: b.info.msn,
                        index: b.parts.len(),
                        bytes: Bytes::copy_from_slice(&b.buf[part.bytes.clone()]),
                        duration_ticks: part.duration_ticks,
                        independent: part.independent,
                    }));
                    b.parts.push(part);
                }
            }
            Err(error) => {
                tracing::debug!(msn = b.info.msn, %error, "ll-hls part not written");
                b.failed = true;
            }
        }
    }

    /// The segmenter published `segment`: finishes its live parts when they hold
    /// exactly its frames, else packages it from its TS bytes.
    pub fn segment(&mut self, segment: &Segment, out: &mut Vec<Output>) {
        let end = segment.start_ts.saturating_add(segment.duration_ticks);
        self.release_audio_before(end, out);
        while self
            .building
            .front()
            .is_some_and(|b| b.info.msn < segment.msn)
        {
            self.building.pop_front();
        }
        if self.following && !self.building.iter().any(|b| b.info.msn == segment.msn) {
            // Announced but never started here, or markers stopped: source mode again.
            self.following = self
                .announced
                .iter()
                .any(|a| a.marker.state.msn > segment.msn);
        }
        let frames = segment_frames(segment);
        let built = match self.building.front() {
            Some(b) if b.info.msn == segment.msn => self.building.pop_front(),
            _ => None,
        };
        // Ended as the fMP4 HLS and DASH files of the segment are (not with the next
        // segment's first DTS, which depends on when its frames arrived): the LL-HLS
        // segment is then the node's one muxed fMP4 form of this MSN, `seg-` and `llseg-`.
        let next = NextDts::estimated(segment, &frames);
        let seq = segment.discontinuity_seq;
        let started = b_started(&built);
        let carried = |b: &Building| {
            frames
                .iter()
                .all(|t| b.builder_config.carries(t.frame.kind()))
        };
        if let Some(b) =
            built.filter(|b| !b.failed && carried(b) && same_frames(&b.assigned, &frames))
        {
            let mut buf = b.buf;
            let mut parts = b.parts;
            let first_new = parts.len();
            match b.builder.finish(next, &mut buf) {
                Ok(more) => {
                    let bytes = Bytes::from(buf);
                    for (k, part) in more.iter().enumerate() {
                        out.push(Output::Part(PartOut {
                            msn: segment.msn,
                            index: first_new + k,
                            bytes: bytes.slice(part.bytes.clone()),
                            duration_ticks: part.duration_ticks,
                            independent: part.independent,
                        }));
                    }
                    parts.extend(more);
                    self.stats.live_segments += 1;
                    out.push(Output::Segment(segment_out(
                        segment,
                        bytes,
                        &parts,
                        b.builder_config,
                        true,
                    )));
                    return;
                }
                Err(error) => {
                    tracing::debug!(msn = segment.msn, %error, "ll-hls segment not finished");
                }
            }
            self.stats.mismatches += 1;
        } else if started {
            self.stats.mismatches += 1;
        } else {
            self.stats.packaged_segments += 1;
        }
        // Package the TS segment: the sequence's config, or one read from this segment.
        let config = match &self.init {
            Some((s, config)) if *s == seq => Some(config.clone()),
            _ => InitConfig::from_frames(frames.iter().map(|t| &t.frame))
                .ok()
                .and_then(|config| self.set_init(seq, config, out)),
        };
        let Some(config) = config else {
            return;
        };
        let mut buf = Vec::new();
        match package_ts_segment(
            &config,
            segment,
            Some(next),
            Some(self.part_ticks),
            &mut buf,
        ) {
            Ok(parts) => out.push(Output::Segment(segment_out(
                segment,
                Bytes::from(buf),
                &parts,
                config,
                false,
            ))),
            Err(error) => {
                tracing::debug!(msn = segment.msn, %error, "ll-hls segment not packaged");
            }
        }
    }
}

/// A segment was being built (its live parts may have been published).
fn b_started(built: &Option<Building>) -> bool {
    built
        .as_ref()
        .is_some_and(|b| !b.parts.is_empty() || !b.assigned.is_empty())
}

/// The builder got exactly the TS segment's frames (as a multiset: arrival order
/// differs from segment order).
fn same_frames(assigned: &[(u64, bool)], frames: &[TimedFrame]) -> bool {
    if assigned.len() != frames.len() {
        return false;
    }
    let mut a = assigned.to_vec();
    let mut b: Vec<(u64, bool)> = frames
        .iter()
        .map(|t| (t.ext_dts, t.frame.kind() == TrackKind::Audio))
        .collect();
    a.sort_unstable();
    b.sort_unstable();
    a == b
}

fn segment_out(
    segment: &Segment,
    bytes: Bytes,
    parts: &[Part],
    config: InitConfig,
    live: bool,
) -> SegmentOut {
    SegmentOut {
        msn: segment.msn,
        discontinuity_seq: segment.discontinuity_seq,
        discontinuous: segment.discontinuous,
        duration_ticks: segment.duration_ticks,
        program_date_time_ms: segment.program_date_time_ms,
        bytes,
        parts: parts
            .iter()
            .map(|p| PartSpan {
                bytes: p.bytes.clone(),
                duration_ticks: p.duration_ticks,
                independent: p.independent,
            })
            .collect(),
        live,
        config,
    }
}
