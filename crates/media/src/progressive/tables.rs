//! Pass 1: the sample tables of a run of segments, fed segment by segment, and the
//! file's head once every segment was seen.

use super::head::write_head;
use super::track::{Settled, TrackTable};
use super::ProgressiveHead;
use crate::fmp4::samples::{collect, default_duration};
use crate::fmp4::{Fmp4Error, InitConfig, TimedFrame};
use crate::TrackKind;

/// Pass 1 of a progressive file: the sample tables of a run of segments that share one
/// [`InitConfig`], fed one segment at a time.
#[derive(Debug, Clone)]
pub struct SampleTables {
    config: InitConfig,
    video: TrackTable,
    audio: TrackTable,
    /// Bytes of the `mdat` payload so far.
    payload: u64,
    segment_lens: Vec<u64>,
}

impl SampleTables {
    /// Empty tables for the tracks `config` carries (the run's sample entries).
    pub fn new(config: &InitConfig) -> Self {
        Self {
            config: config.clone(),
            video: TrackTable::default(),
            audio: TrackTable::default(),
            payload: 0,
            segment_lens: Vec::new(),
        }
    }

    /// Adds one segment's frames (in the order the segment holds them: each track in
    /// decode order) as a video chunk and an audio chunk; returns the bytes those chunks
    /// take (what [`super::write_chunks`] writes for the same frames). A segment without
    /// frames of a configured track adds nothing.
    ///
    /// # Errors
    /// [`Fmp4Error::TooLarge`] when a sample exceeds the 32-bit size field or a track
    /// the sample count a `moov` can index (2²⁶ samples, 400 hours of 48 kHz AAC).
    pub fn push_segment(&mut self, frames: &[TimedFrame]) -> Result<u64, Fmp4Error> {
        let (video, audio) = collect(&self.config, frames);
        self.video.push_run(&video, self.payload)?;
        let video_end = self.payload + video.bytes as u64;
        self.audio.push_run(&audio, video_end)?;
        let len = (video.bytes + audio.bytes) as u64;
        self.payload += len;
        self.segment_lens.push(len);
        Ok(len)
    }

    /// The file's head: `ftyp`, the `moov` of every sample pushed, the `mdat` header.
    ///
    /// # Errors
    /// [`Fmp4Error::Empty`] when no sample was pushed.
    pub fn finish(mut self) -> Result<ProgressiveHead, Fmp4Error> {
        if self.video.sizes.is_empty() && self.audio.sizes.is_empty() {
            return Err(Fmp4Error::Empty);
        }
        let settle = |table: &mut TrackTable, kind| Settled {
            last_duration: table.settle(default_duration(&self.config, kind)),
            table: std::mem::take(table),
        };
        let video = settle(&mut self.video, TrackKind::Video);
        let audio = settle(&mut self.audio, TrackKind::Audio);
        let bytes = write_head(&self.config, &video, &audio, self.payload);
        let total_len = bytes.len() as u64 + self.payload;
        Ok(ProgressiveHead {
            bytes,
            total_len,
            segment_lens: self.segment_lens,
        })
    }
}
