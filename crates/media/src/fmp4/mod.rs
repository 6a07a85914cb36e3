//! fMP4/CMAF packaging (ISO/IEC 14496-12, ISO/IEC 23000-19): init segments and media
//! segments built from the same frames and cut points as the MPEG-TS segments, so a
//! node's HLS, LL-HLS and DASH describe one timeline and two nodes write the same bytes
//! (DESIGN.md, invariant 1).
//!
//! ```text
//! frames of a keyframe ─► InitConfig::from_frames ─► write_init ─► init.mp4 (ftyp, moov)
//! Segment (TS bytes) ───► frames_from_ts ─► write_segment ─► styp, prft, (moof, mdat)+
//!                                               └─ one moof+mdat per LL-HLS part
//! frames of the open segment, as they arrive ─► PartBuilder ─► the same parts, live
//! ```
//!
//! Everything here is a pure function writing into a `Vec<u8>`; no I/O, no clock.
//!
//! # Choices
//!
//! - **One timescale, 90 kHz, for every track.** `tfdt` is the track's extended
//!   (unwrapped) 90 kHz DTS of the fragment's first sample, the very number the TS
//!   segmenter cuts on, so it is identical on every node for the same frame and equal
//!   to the TS timeline without rounding. Audio at 44.1 kHz then has sample durations
//!   of 2089 or 2090 ticks (taken from the TS timestamps); AAC decoders do not care.
//! - **Tracks:** video is track 1, audio track 2, whatever the [`InitConfig`] carries,
//!   so a muxed (HLS) and a split (DASH, one track per file) packaging name tracks alike.
//!   Frames of a track the config does not carry are left out, which is how the split
//!   packaging is made from the same frames.
//! - **No edit list.** Presentation time is `tfdt + composition offset` (= the source
//!   PTS), as in the TS segments; composition offsets are written in `trun` version 1
//!   (signed) whenever a fragment has a sample with PTS ≠ DTS.
//! - **Video samples** are converted from Annex B to 4-byte length-prefixed NAL units;
//!   access unit delimiters, filler data and the parameter sets (SPS/PPS, and VPS for
//!   H.265) are dropped: `avc1`/`hvc1` carry the parameter sets in the sample entry
//!   (for `hvc1` the arrays are declared complete). A stream whose parameter sets change
//!   needs a new init segment: compare [`InitConfig`]s (they are `Eq`).
//! - **Audio samples** are raw AAC: the ADTS header (and its CRC, if any) is stripped.
//! - **Sample durations** are DTS differences; the last sample of a fragment takes the
//!   distance to the next fragment's first DTS when known, else the previous sample's
//!   duration (else one frame: 1024 samples of audio, 1/25 s of video).
//! - **Parts:** a segment is written as the concatenation of its parts, each an
//!   independent `moof+mdat` (the cheap path rfc8216bis allows: segment bytes = parts'
//!   bytes). `styp` and `prft` precede the first part only. See [`part_starts`] for the
//!   deterministic part cut rule.
//! - **Brands:** `ftyp` major `iso6` with `iso6 isom dash` (+ `cmfc` when one track);
//!   `styp` major `msdh` with `msdh` (+ `cmfs` when one track): CMAF tracks carry one
//!   track, a muxed HLS packaging does not claim CMAF.

pub(crate) mod bmff;
mod config;
mod fragment;
mod init;
mod live;
pub(crate) mod movie;
mod rebase;
mod records;
pub(crate) mod samples;
mod segment;
mod timed;
mod track;
pub mod wvtt;

use thiserror::Error;

pub use config::{AudioTrack, InitConfig, VideoTrack};
pub use fragment::{write_fragment, FragmentInfo, FragmentOptions, ProducerTime};
pub use init::write_init;
pub use live::{PartBuilder, MAX_TRACK_WAIT_TICKS};
pub use rebase::{first_decode_time, rebase_decode_times};
pub use segment::{
    frames_from_ts, package_ts_segment, part_starts, segment_frames, sequence_number,
    write_segment, NextDts, Part, SegmentOptions,
};
pub use timed::TimedFrame;
pub use track::{marker_of, package_segment, write_track_init, Track, TrackCache};

use crate::Codec;

/// Timescale of every track (ticks per second), the MPEG-TS clock.
pub const TIMESCALE: u32 = crate::CLOCK_HZ as u32;

/// Track ID of the video track in every init and fragment brdyun writes.
pub const VIDEO_TRACK_ID: u32 = 1;

/// Track ID of the audio track in every init and fragment brdyun writes.
pub const AUDIO_TRACK_ID: u32 = 2;

/// Why an init segment or fragment could not be written.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum Fmp4Error {
    /// Video frames were given but none carried the parameter sets the sample entry
    /// needs (SPS and PPS; VPS too for H.265). Wait for a keyframe.
    #[error("{0:?} parameter sets missing")]
    NoParameterSets(Codec),
    /// A parameter set is malformed.
    #[error("{codec:?} parameter set invalid: {reason}")]
    BadParameterSet {
        /// The video codec.
        codec: Codec,
        /// What the parser said.
        reason: String,
    },
    /// The first AAC frame has no valid ADTS header.
    #[error("aac frame has no valid adts header")]
    BadAudioConfig,
    /// Nothing to write: no track in the config, or no frame of a configured track.
    #[error("no samples of a configured track")]
    Empty,
    /// A fragment would exceed the 32-bit box sizes (4 GiB).
    #[error("fragment too large")]
    TooLarge,
}
