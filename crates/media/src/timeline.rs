//! The timeline: the small state at a segment boundary that determines everything after
//! it, and the marker packet that carries it in-band to downstream nodes.
//!
//! A segment's bytes are a pure function of its [`TimelineState`], its frames and the
//! few extra fields of its [`TimelineMarker`]. Every segment brdyun writes starts with
//! one marker packet on [`crate::ts::MARKER_PID`]; a downstream node that pulls our TS
//! (our segments concatenated) parses it and adopts the state, which is how two nodes
//! end up with the same boundaries, numbers, dates and bytes (DESIGN.md, invariant 1;
//! OTT-GRP-4, OTT-ELIG-2).
//!
//! Marker payload layout (184 bytes, big-endian):
//!
//! ```text
//! 0   magic "BRDYTL"          6      93  cc pat,pmt,video,audio,marker 5
//! 6   version (1)             1      98  video stream_type (0 = none)  1
//! 7   flags: 1 disc, 2 key,   1      99  audio stream_type (0 = none)  1
//!     4 open, 8 close
//! 8   msn                     8      100 zero padding                  80
//! 16  discontinuity_seq       8      180 CRC-32/MPEG-2 of bytes 0..180 4
//! 24  anchor_ts               8
//! 32  anchor_unix_ms (i64)    8
//! 40  wraps                   8
//! 48  start_ts                8
//! 56  duration_ticks          8
//! 64  program_date_time_ms    8
//! 72  target_duration_ms      4
//! 76  video_frames            4
//! 80  audio_frames            4
//! 84  reserved (zero)         9
//! ```
//!
//! # Whole, open and close markers
//!
//! In a segment's bytes (and the whole-segment relay) the marker is *whole*: it
//! precedes the frames and already knows the duration and the frame counts. The live
//! relay (frames as they are cut, [`crate::ts::mux::RelayMuxer`]) cannot know them
//! yet: it sends an *open* marker where the segment starts (duration 0; the count of
//! its leading track 1, the other 0) and, once the segment is written, its whole
//! marker again flagged *close*, after the segment's frames. [`TimelineMarker::parse`]
//! reads whole markers only, so code that knows nothing of the live relay never
//! mistakes a phase marker for a segment; [`TimelineMarker::parse_phase`] reads all
//! three.

use thiserror::Error;

use crate::crc::crc32_mpeg2;
use crate::Codec;

/// Size of a marker payload: one TS packet minus its 4-byte header.
pub const MARKER_PAYLOAD_SIZE: usize = 184;

/// The bytes every marker payload starts with.
pub const MARKER_MAGIC: [u8; 6] = *b"BRDYTL";

/// The marker layout version this code writes and reads.
pub const MARKER_VERSION: u8 = 1;

const CRC_OFFSET: usize = MARKER_PAYLOAD_SIZE - 4;
const FLAG_DISCONTINUOUS: u8 = 0x01;
const FLAG_KEYFRAME_START: u8 = 0x02;
const FLAG_OPEN: u8 = 0x04;
const FLAG_CLOSE: u8 = 0x08;

/// Where a marker stands in its segment (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MarkerPhase {
    /// Before the segment's frames, with its duration and counts (segment bytes, the
    /// whole-segment relay).
    Whole,
    /// Before the segment's frames, as it starts: duration and counts not known yet.
    Open,
    /// After the segment's frames, when it was written: the whole marker.
    Close,
}

/// Whether a marker payload starts a segment (a whole or open marker, not a close
/// one): what a relay's recent segments are kept from.
pub fn starts_segment(payload: &[u8]) -> bool {
    payload.len() == MARKER_PAYLOAD_SIZE
        && payload[0..6] == MARKER_MAGIC
        && payload[7] & FLAG_CLOSE == 0
}

/// Why a marker payload was rejected.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum MarkerError {
    /// The payload is not exactly 184 bytes.
    #[error("marker payload is {0} bytes, expected 184")]
    Length(usize),
    /// The magic bytes are missing: this packet is not a brdyun marker.
    #[error("not a brdyun timeline marker")]
    Magic,
    /// Written by a newer (or unknown) brdyun.
    #[error("unsupported marker version {0}")]
    Version(u8),
    /// The payload was damaged in transit.
    #[error("marker crc mismatch")]
    Crc,
    /// A field holds a value this version never writes.
    #[error("marker field {0} invalid")]
    Field(&'static str),
}

/// The 4-bit continuity counters of every PID brdyun writes, so that consecutive
/// segments concatenate into one continuous transport stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ContinuityCounters {
    /// PAT (PID 0).
    pub pat: u8,
    /// PMT ([`crate::ts::PMT_PID`]).
    pub pmt: u8,
    /// Video ([`crate::ts::VIDEO_PID`]).
    pub video: u8,
    /// Audio ([`crate::ts::AUDIO_PID`]).
    pub audio: u8,
    /// Timeline marker ([`crate::ts::MARKER_PID`]).
    pub marker: u8,
}

/// The elementary streams listed in the PMT; sticky once seen, so the PMT stays stable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Tracks {
    /// The video codec, when the stream has (had) video.
    pub video: Option<Codec>,
    /// The audio codec, when the stream has (had) audio.
    pub audio: Option<Codec>,
}

impl Tracks {
    /// These tracks updated with the codecs of `frames` (the last codec of each kind wins).
    pub fn with_frames<'a>(mut self, frames: impl IntoIterator<Item = &'a crate::Frame>) -> Self {
        for f in frames {
            match f.kind() {
                crate::TrackKind::Video => self.video = Some(f.codec),
                crate::TrackKind::Audio => self.audio = Some(f.codec),
            }
        }
        self
    }
}

/// The state at a segment boundary that, with the frames, determines everything after it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct TimelineState {
    /// Media sequence number of the segment that starts here.
    pub msn: u64,
    /// Discontinuity sequence number of that segment.
    pub discontinuity_seq: u64,
    /// Extended (unwrapped) 90 kHz timestamp of the wall-clock anchor.
    pub anchor_ts: u64,
    /// Wall-clock time at `anchor_ts`, Unix milliseconds.
    pub anchor_unix_ms: i64,
    /// How many times the 33-bit source clock had wrapped at the segment start
    /// (the high bits of the segment's extended start timestamp).
    pub wraps: u64,
    /// Continuity counters at the first packet of the segment.
    pub cc: ContinuityCounters,
    /// The elementary streams listed in the segment's PMT.
    pub tracks: Tracks,
}

impl TimelineState {
    /// Wall-clock time of an extended timestamp: `anchor_unix_ms + (ts − anchor_ts) / 90`,
    /// rounded toward negative infinity (exact integer arithmetic, identical on every node).
    pub fn unix_ms_at(&self, ext_ts: u64) -> i64 {
        let delta = i128::from(ext_ts) - i128::from(self.anchor_ts);
        let ms = i128::from(self.anchor_unix_ms) + delta.div_euclid(90);
        i64::try_from(ms).unwrap_or(if ms < 0 { i64::MIN } else { i64::MAX })
    }
}

/// Everything a segment's first packet says about it: the state it starts with plus the
/// segment's own place (start, duration, date) and size, so a downstream node can cut
/// exactly there and reproduce the segment byte for byte.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct TimelineMarker {
    /// The state at the start of the segment.
    pub state: TimelineState,
    /// The segment follows a discontinuity (EXT-X-DISCONTINUITY).
    pub discontinuous: bool,
    /// The segment's first frame is a random access point.
    pub keyframe_start: bool,
    /// Extended 90 kHz PTS of the segment's first frame.
    pub start_ts: u64,
    /// Segment duration in 90 kHz ticks.
    pub duration_ticks: u64,
    /// EXT-X-PROGRAM-DATE-TIME of the segment, Unix milliseconds.
    pub program_date_time_ms: i64,
    /// The segmenter's configured target duration.
    pub target_duration_ms: u32,
    /// Number of video frames in the segment.
    pub video_frames: u32,
    /// Number of audio frames in the segment.
    pub audio_frames: u32,
}

impl TimelineMarker {
    /// The 184-byte payload of the marker packet.
    pub fn encode(&self) -> [u8; MARKER_PAYLOAD_SIZE] {
        self.encode_phase(MarkerPhase::Whole)
    }

    /// The open form of this marker: the same start, duration 0, and the count of the
    /// leading track (video when the segment has video) 1, the other 0.
    pub fn opening(&self) -> Self {
        let video = self.video_frames > 0;
        Self {
            duration_ticks: 0,
            video_frames: u32::from(video),
            audio_frames: u32::from(!video),
            ..*self
        }
    }

    /// The payload of this marker in `phase` (see the module docs).
    pub fn encode_phase(&self, phase: MarkerPhase) -> [u8; MARKER_PAYLOAD_SIZE] {
        let mut b = [0u8; MARKER_PAYLOAD_SIZE];
        let s = &self.state;
        b[0..6].copy_from_slice(&MARKER_MAGIC);
        b[6] = MARKER_VERSION;
        b[7] = (if self.discontinuous {
            FLAG_DISCONTINUOUS
        } else {
            0
        }) | (if self.keyframe_start {
            FLAG_KEYFRAME_START
        } else {
            0
        }) | match phase {
            MarkerPhase::Whole => 0,
            MarkerPhase::Open => FLAG_OPEN,
            MarkerPhase::Close => FLAG_CLOSE,
        };
        let words: [[u8; 8]; 8] = [
            s.msn.to_be_bytes(),
            s.discontinuity_seq.to_be_bytes(),
            s.anchor_ts.to_be_bytes(),
            s.anchor_unix_ms.to_be_bytes(),
            s.wraps.to_be_bytes(),
            self.start_ts.to_be_bytes(),
            self.duration_ticks.to_be_bytes(),
            self.program_date_time_ms.to_be_bytes(),
        ];
        for (i, w) in words.iter().enumerate() {
            b[8 + i * 8..16 + i * 8].copy_from_slice(w);
        }
        b[72..76].copy_from_slice(&self.target_duration_ms.to_be_bytes());
        b[76..80].copy_from_slice(&self.video_frames.to_be_bytes());
        b[80..84].copy_from_slice(&self.audio_frames.to_be_bytes());
        let cc = s.cc;
        b[93..98].copy_from_slice(&[
            cc.pat & 0x0f,
            cc.pmt & 0x0f,
            cc.video & 0x0f,
            cc.audio & 0x0f,
            cc.marker & 0x0f,
        ]);
        b[98] = s.tracks.video.map_or(0, Codec::stream_type);
        b[99] = s.tracks.audio.map_or(0, Codec::stream_type);
        let crc = crc32_mpeg2(&b[..CRC_OFFSET]);
        b[CRC_OFFSET..].copy_from_slice(&crc.to_be_bytes());
        b
    }

    /// Parses the 184-byte payload of a packet on [`crate::ts::MARKER_PID`]: a whole
    /// marker (an open or close one is refused as a bad flag).
    ///
    /// # Errors
    /// [`MarkerError`] when the payload has the wrong size, is not a marker, comes from
    /// an unknown version, fails its CRC, or holds values this version never writes.
    pub fn parse(payload: &[u8]) -> Result<Self, MarkerError> {
        match Self::parse_phase(payload)? {
            (MarkerPhase::Whole, marker) => Ok(marker),
            _ => Err(MarkerError::Field("flags")),
        }
    }

    /// [`TimelineMarker::parse`] of a marker in any phase.
    ///
    /// # Errors
    /// As [`TimelineMarker::parse`]; also when both phase flags are set.
    pub fn parse_phase(payload: &[u8]) -> Result<(MarkerPhase, Self), MarkerError> {
        let b: &[u8; MARKER_PAYLOAD_SIZE] = payload
            .try_into()
            .map_err(|_| MarkerError::Length(payload.len()))?;
        if b[0..6] != MARKER_MAGIC {
            return Err(MarkerError::Magic);
        }
        if b[6] != MARKER_VERSION {
            return Err(MarkerError::Version(b[6]));
        }
        let (body, crc) = b.split_at(CRC_OFFSET);
        if crc32_mpeg2(body).to_be_bytes() != *crc {
            return Err(MarkerError::Crc);
        }
        let flags = b[7];
        if flags & !(FLAG_DISCONTINUOUS | FLAG_KEYFRAME_START | FLAG_OPEN | FLAG_CLOSE) != 0 {
            return Err(MarkerError::Field("flags"));
        }
        let phase = match (flags & FLAG_OPEN != 0, flags & FLAG_CLOSE != 0) {
            (false, false) => MarkerPhase::Whole,
            (true, false) => MarkerPhase::Open,
            (false, true) => MarkerPhase::Close,
            (true, true) => return Err(MarkerError::Field("flags")),
        };
        let u64_at = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[i..i + 8]);
            u64::from_be_bytes(w)
        };
        let u32_at = |i: usize| {
            let mut w = [0u8; 4];
            w.copy_from_slice(&b[i..i + 4]);
            u32::from_be_bytes(w)
        };
        if b[84..93].iter().chain(&b[100..CRC_OFFSET]).any(|&x| x != 0) {
            return Err(MarkerError::Field("reserved"));
        }
        if b[93..98].iter().any(|&c| c > 0x0f) {
            return Err(MarkerError::Field("continuity counter"));
        }
        let video = match b[98] {
            0 => None,
            0x1b => Some(Codec::H264),
            0x24 => Some(Codec::H265),
            _ => return Err(MarkerError::Field("video stream type")),
        };
        let audio = match b[99] {
            0 => None,
            0x0f => Some(Codec::Aac),
            _ => return Err(MarkerError::Field("audio stream type")),
        };
        let start_ts = u64_at(48);
        let wraps = u64_at(40);
        if start_ts >> 33 != wraps {
            return Err(MarkerError::Field("wraps"));
        }
        let state = TimelineState {
            msn: u64_at(8),
            discontinuity_seq: u64_at(16),
            anchor_ts: u64_at(24),
            anchor_unix_ms: u64_at(32) as i64,
            wraps,
            cc: ContinuityCounters {
                pat: b[93],
                pmt: b[94],
                video: b[95],
                audio: b[96],
                marker: b[97],
            },
            tracks: Tracks { video, audio },
        };
        Ok((
            phase,
            Self {
                state,
                discontinuous: flags & FLAG_DISCONTINUOUS != 0,
                keyframe_start: flags & FLAG_KEYFRAME_START != 0,
                start_ts,
                duration_ticks: u64_at(56),
                program_date_time_ms: u64_at(64) as i64,
                target_duration_ms: u32_at(72),
                video_frames: u32_at(76),
                audio_frames: u32_at(80),
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_round_trips_and_rejects_damage() {
        let m = TimelineMarker {
            state: TimelineState {
                msn: 7,
                discontinuity_seq: 2,
                anchor_ts: (1 << 33) + 5,
                anchor_unix_ms: -12,
                wraps: 1,
                cc: ContinuityCounters {
                    pat: 1,
                    pmt: 2,
                    video: 3,
                    audio: 15,
                    marker: 0,
                },
                tracks: Tracks {
                    video: Some(Codec::H265),
                    audio: Some(Codec::Aac),
                },
            },
            discontinuous: true,
            keyframe_start: true,
            start_ts: (1 << 33) + 900,
            duration_ticks: 180_000,
            program_date_time_ms: 1_700_000_000_000,
            target_duration_ms: 2000,
            video_frames: 50,
            audio_frames: 94,
        };
        let bytes = m.encode();
        assert_eq!(TimelineMarker::parse(&bytes), Ok(m));
        let mut bad = bytes;
        bad[20] ^= 1;
        assert_eq!(TimelineMarker::parse(&bad), Err(MarkerError::Crc));
        assert_eq!(
            TimelineMarker::parse(&bytes[..100]),
            Err(MarkerError::Length(100))
        );
        let mut other = bytes;
        other[0] = b'X';
        assert_eq!(TimelineMarker::parse(&other), Err(MarkerError::Magic));
    }

    #[test]
    fn open_and_close_markers_round_trip_and_only_whole_ones_parse_plainly() {
        let m = TimelineMarker {
            start_ts: 90_000,
            duration_ticks: 180_000,
            video_frames: 50,
            audio_frames: 94,
            keyframe_start: true,
            ..TimelineMarker::default()
        };
        let open = m.opening();
        assert_eq!(
            (open.duration_ticks, open.video_frames, open.audio_frames),
            (0, 1, 0)
        );
        let audio_only = TimelineMarker {
            video_frames: 0,
            ..m
        }
        .opening();
        assert_eq!((audio_only.video_frames, audio_only.audio_frames), (0, 1));
        for (phase, marker) in [
            (MarkerPhase::Whole, m),
            (MarkerPhase::Open, open),
            (MarkerPhase::Close, m),
        ] {
            let bytes = marker.encode_phase(phase);
            assert_eq!(TimelineMarker::parse_phase(&bytes), Ok((phase, marker)));
            assert_eq!(starts_segment(&bytes), phase != MarkerPhase::Close);
            assert_eq!(
                TimelineMarker::parse(&bytes).is_ok(),
                phase == MarkerPhase::Whole
            );
        }
    }

    #[test]
    fn wall_clock_is_floor_of_ticks_over_90() {
        let s = TimelineState {
            anchor_ts: 1000,
            anchor_unix_ms: 50,
            ..TimelineState::default()
        };
        assert_eq!(s.unix_ms_at(1000 + 90 * 3 + 89), 53);
        assert_eq!(s.unix_ms_at(1000 - 1), 49);
    }
}
