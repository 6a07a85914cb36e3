//! The unit that flows from every input into the segmenter: one access unit
//! (a video picture or a run of audio frames) with its source timestamps.

use bytes::Bytes;

/// MPEG-TS timestamps tick at 90 kHz.
pub const CLOCK_HZ: u64 = 90_000;

/// PTS and DTS are 33-bit counters that wrap about every 26.5 hours.
pub const PTS_MASK: u64 = (1 << 33) - 1;

/// Which elementary stream a frame belongs to; a stream has at most one of each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TrackKind {
    /// The video track (H.264 or H.265).
    Video,
    /// The audio track (AAC).
    Audio,
}

/// The codecs brdyun packages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Codec {
    /// H.264 / AVC, carried as Annex B byte stream.
    H264,
    /// H.265 / HEVC, carried as Annex B byte stream.
    H265,
    /// AAC, carried as ADTS frames.
    Aac,
}

impl Codec {
    /// The track this codec belongs to.
    pub fn kind(self) -> TrackKind {
        match self {
            Codec::H264 | Codec::H265 => TrackKind::Video,
            Codec::Aac => TrackKind::Audio,
        }
    }

    /// The MPEG-TS `stream_type` in the PMT.
    pub fn stream_type(self) -> u8 {
        match self {
            Codec::H264 => 0x1b,
            Codec::H265 => 0x24,
            Codec::Aac => 0x0f,
        }
    }
}

/// One access unit with its source timestamps.
///
/// `data` is in the MPEG-TS elementary-stream form: Annex B (start codes) for video,
/// ADTS frames for audio. Timestamps are the source's own 33-bit, 90 kHz values
/// (already masked with [`PTS_MASK`]); the segmenter unwraps them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// Which codec (and so which track) this frame belongs to.
    pub codec: Codec,
    /// Presentation timestamp, 90 kHz, 33 bits.
    pub pts: u64,
    /// Decoding timestamp, 90 kHz, 33 bits (equal to `pts` without B-frames).
    pub dts: u64,
    /// True for a random access point: an IDR/IRAP picture, or any audio frame.
    pub keyframe: bool,
    /// The elementary-stream bytes, shared without copying.
    pub data: Bytes,
}

impl Frame {
    /// The track this frame belongs to.
    pub fn kind(&self) -> TrackKind {
        self.codec.kind()
    }
}
