//! Parts as frames arrive: the LL-HLS path, byte-identical to [`write_segment`] when
//! the frames are the same.
//!
//! A part can be written once its frames are known: when a primary (video) frame crosses
//! the next grid line (see the part cut rule in [`super::segment`]) and the other track
//! has passed that frame's DTS too, since frames arrive in DTS order per track but
//! interleaved by the source's whim. Its last samples end where the next part's first
//! samples begin, exactly as [`write_segment`] computes them.
//!
//! A source whose audio lags its video by more than [`MAX_TRACK_WAIT_TICKS`] would hold
//! parts back that long; past it the part is written without the late audio, which then
//! goes into the next part (still a valid part, but no longer the bytes
//! [`write_segment`] gives).

use std::collections::VecDeque;

use super::config::InitConfig;
use super::fragment::{write_fragment, FragmentOptions, ProducerTime};
use super::segment::{sequence_number, NextDts, Part};
use super::timed::TimedFrame;
use super::Fmp4Error;
use crate::TrackKind;

#[cfg(doc)]
use super::segment::write_segment;

/// How far (90 kHz) the primary track may run past a part boundary while the other
/// track has not reached it, before the part is written without waiting: 1 s.
pub const MAX_TRACK_WAIT_TICKS: u64 = 90_000;

/// Builds one segment's parts as its frames arrive; see the module docs.
#[derive(Debug)]
pub struct PartBuilder {
    config: InitConfig,
    msn: u64,
    part_ticks: u64,
    producer_time: Option<ProducerTime>,
    primary: TrackKind,
    /// DTS of the segment's first primary frame: the grid origin.
    origin: Option<u64>,
    /// Grid index of the last part boundary found.
    index: u64,
    /// DTS of primary frames that start a part, not yet written.
    boundaries: VecDeque<u64>,
    /// Frames not yet written, in arrival order.
    pending: Vec<TimedFrame>,
    /// Highest DTS seen per track.
    last_primary: Option<u64>,
    last_other: Option<u64>,
    parts_written: usize,
}

impl PartBuilder {
    /// A builder for segment `msn`, cutting parts every `part_ticks` (90 kHz) of the
    /// primary track; `producer_time` goes into the first part's `prft`.
    pub fn new(
        config: InitConfig,
        msn: u64,
        part_ticks: u64,
        producer_time: Option<ProducerTime>,
    ) -> Self {
        let primary = if config.video.is_some() {
            TrackKind::Video
        } else {
            TrackKind::Audio
        };
        Self {
            config,
            msn,
            part_ticks: part_ticks.max(1),
            producer_time,
            primary,
            origin: None,
            index: 0,
            boundaries: VecDeque::new(),
            pending: Vec::new(),
            last_primary: None,
            last_other: None,
            parts_written: 0,
        }
    }

    /// The parts written so far.
    pub fn parts_written(&self) -> usize {
        self.parts_written
    }

    /// Adds a frame of this segment (frames of a track the config does not carry are
    /// ignored); appends the parts it completes to `out` and returns them, their byte
    /// ranges in `out` (pass the same buffer for the whole segment to get its bytes).
    ///
    /// # Errors
    /// As [`write_fragment`].
    pub fn push(&mut self, frame: TimedFrame, out: &mut Vec<u8>) -> Result<Vec<Part>, Fmp4Error> {
        let kind = frame.frame.kind();
        if !self.config.carries(kind) {
            return Ok(Vec::new());
        }
        let dts = frame.ext_dts;
        if kind == self.primary {
            self.last_primary = Some(self.last_primary.map_or(dts, |d| d.max(dts)));
            match self.origin {
                None => self.origin = Some(dts),
                Some(origin) => {
                    let index = dts.saturating_sub(origin) / self.part_ticks;
                    if index > self.index {
                        self.index = index;
                        self.boundaries.push_back(dts);
                    }
                }
            }
        } else {
            self.last_other = Some(self.last_other.map_or(dts, |d| d.max(dts)));
        }
        self.pending.push(frame);
        let mut parts = Vec::new();
        while let Some(&boundary) = self.boundaries.front() {
            let other_passed = self.config.track_count() < 2
                || self.last_other.is_some_and(|d| d >= boundary)
                || self
                    .last_primary
                    .is_some_and(|d| d >= boundary.saturating_add(MAX_TRACK_WAIT_TICKS));
            if !other_passed {
                break;
            }
            self.boundaries.pop_front();
            parts.push(self.write_before(Some(boundary), NextDts::default(), out)?);
        }
        Ok(parts)
    }

    /// Ends the segment: writes what is left (as many parts as the boundaries found say),
    /// the last samples ending at `next` (the next segment's first DTS, when known).
    ///
    /// # Errors
    /// As [`write_fragment`]; [`Fmp4Error::Empty`] when the segment got no frame at all.
    pub fn finish(mut self, next: NextDts, out: &mut Vec<u8>) -> Result<Vec<Part>, Fmp4Error> {
        let mut parts = Vec::new();
        while let Some(boundary) = self.boundaries.pop_front() {
            parts.push(self.write_before(Some(boundary), NextDts::default(), out)?);
        }
        if !self.pending.is_empty() || self.parts_written == 0 {
            parts.push(self.write_before(None, next, out)?);
        }
        Ok(parts)
    }

    /// Writes the pending frames that sort before the primary frame at `boundary` (all
    /// of them without one) as the next part.
    fn write_before(
        &mut self,
        boundary: Option<u64>,
        next: NextDts,
        out: &mut Vec<u8>,
    ) -> Result<Part, Fmp4Error> {
        let order = |t: &TimedFrame| (t.ext_dts, t.frame.kind() == TrackKind::Audio);
        self.pending.sort_by_key(order);
        let split = match boundary {
            Some(b) => self
                .pending
                .partition_point(|t| order(t) < (b, self.primary == TrackKind::Audio)),
            None => self.pending.len(),
        };
        let rest_first = |kind: TrackKind| {
            self.pending[split..]
                .iter()
                .find(|t| t.frame.kind() == kind)
                .map(|t| t.ext_dts)
        };
        let options = FragmentOptions {
            sequence_number: sequence_number(self.msn, self.parts_written),
            styp: self.parts_written == 0,
            producer_time: if self.parts_written == 0 {
                self.producer_time
            } else {
                None
            },
            next_video_dts: rest_first(TrackKind::Video).or(next.video),
            next_audio_dts: rest_first(TrackKind::Audio).or(next.audio),
        };
        let at = out.len();
        let info = write_fragment(&self.config, &self.pending[..split], &options, out)?;
        self.pending.drain(..split);
        self.parts_written += 1;
        Ok(Part {
            bytes: at..out.len(),
            first_dts: info.first_dts,
            duration_ticks: info.duration_ticks,
            independent: info.independent,
        })
    }
}
