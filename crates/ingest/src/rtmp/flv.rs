//! FLV tag bodies (what RTMP audio and video messages carry) to [`media::Frame`]s:
//! AVC and HEVC (legacy codec ids 7 and 12, and enhanced RTMP FourCCs `avc1`/`hvc1`)
//! become Annex B access units with the parameter sets in front of every keyframe;
//! AAC becomes ADTS frames.
//!
//! Timestamps: the RTMP millisecond timestamp is unwrapped across its 32-bit wrap,
//! scaled to 90 kHz and masked to 33 bits (negative values wrap; the segmenter unwraps).

use bytes::Bytes;
use media::codec::aac::{AacError, AudioSpecificConfig};
use media::{Codec, Frame, PTS_MASK};
use thiserror::Error;

use super::records::{parse_avcc, parse_hvcc, DecoderConfig, RecordError};

/// Why an FLV tag body could not be converted.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum FlvError {
    /// The tag is shorter than its header says.
    #[error("flv tag truncated")]
    Truncated,
    /// A decoder configuration record that cannot be read.
    #[error("bad decoder configuration record: {0}")]
    Record(#[from] RecordError),
    /// A NAL unit length runs past the end of the tag.
    #[error("nal unit length {len} exceeds the {left} bytes left")]
    NalOverrun {
        /// The length read.
        len: usize,
        /// The bytes that were left.
        left: usize,
    },
    /// A bad AAC configuration or a frame ADTS cannot carry.
    #[error("aac: {0}")]
    Aac(#[from] AacError),
}

/// What a tag turned into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TagOutcome {
    /// One access unit.
    Frame(Frame),
    /// A sequence header was stored (or a tag with nothing to output, like end of sequence).
    Config,
    /// Media arrived before its sequence header; it is dropped.
    NoConfig,
    /// A codec this server does not package (sound format or video codec id / FourCC).
    Unsupported(UnsupportedCodec),
}

/// A codec that is counted and dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnsupportedCodec {
    /// An FLV sound format other than AAC (10).
    Audio(u8),
    /// A legacy FLV video codec id other than AVC (7) and HEVC (12).
    Video(u8),
    /// An enhanced-RTMP FourCC other than `avc1` and `hvc1`.
    FourCc([u8; 4]),
}

/// Unwraps a 32-bit millisecond timestamp into a continuous 64-bit one, choosing the
/// value nearest the previous one (so slightly out-of-order audio/video around the
/// wrap lands on the right side).
#[derive(Debug, Clone, Default)]
pub struct TimestampUnwrapper {
    last: Option<i64>,
}

impl TimestampUnwrapper {
    /// The unwrapped value of `ts`.
    pub fn unwrap(&mut self, ts: u32) -> i64 {
        let value = match self.last {
            None => i64::from(ts),
            Some(last) => {
                let base = last & !0xffff_ffff;
                let candidates =
                    [base - (1 << 32), base, base + (1 << 32)].map(|b| b + i64::from(ts));
                candidates
                    .into_iter()
                    .min_by_key(|c| (c - last).abs())
                    .expect("three candidates")
            }
        };
        self.last = Some(value);
        value
    }
}

/// Milliseconds (possibly negative) to a 33-bit 90 kHz timestamp.
fn to_90k(ms: i64) -> u64 {
    (ms.wrapping_mul(90) as u64) & PTS_MASK
}

/// Converts one publisher's FLV audio and video tag bodies into frames.
#[derive(Debug, Default)]
pub struct FlvConverter {
    video: Option<DecoderConfig>,
    audio: Option<AudioSpecificConfig>,
    video_clock: TimestampUnwrapper,
    audio_clock: TimestampUnwrapper,
}

impl FlvConverter {
    /// A converter with no sequence headers seen yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Converts a video tag body received with RTMP timestamp `timestamp` (ms).
    ///
    /// # Errors
    /// An [`FlvError`] for a truncated tag, a lying configuration record or NAL length.
    pub fn video(&mut self, timestamp: u32, tag: &[u8]) -> Result<TagOutcome, FlvError> {
        let &b0 = tag.first().ok_or(FlvError::Truncated)?;
        let frame_type = (b0 >> 4) & 0x07;
        let (codec, packet_type, cts, body) = if b0 & 0x80 != 0 {
            // Enhanced RTMP: IsExHeader | FrameType(3) | PacketType(4), then a FourCC.
            let fourcc: [u8; 4] = tag
                .get(1..5)
                .and_then(|b| b.try_into().ok())
                .ok_or(FlvError::Truncated)?;
            let codec = match &fourcc {
                b"avc1" => Codec::H264,
                b"hvc1" => Codec::H265,
                _ => return Ok(TagOutcome::Unsupported(UnsupportedCodec::FourCc(fourcc))),
            };
            match b0 & 0x0f {
                // SequenceStart
                0 => (codec, 0, 0, tag.get(5..).ok_or(FlvError::Truncated)?),
                // CodedFrames: a composition time follows.
                1 => {
                    let cts = tag.get(5..8).ok_or(FlvError::Truncated)?;
                    (
                        codec,
                        1,
                        si24(cts),
                        tag.get(8..).ok_or(FlvError::Truncated)?,
                    )
                }
                // CodedFramesX: composition time zero.
                3 => (codec, 1, 0, tag.get(5..).ok_or(FlvError::Truncated)?),
                // SequenceEnd, Metadata, MPEG2TSSequenceStart, reserved: nothing to output.
                _ => return Ok(TagOutcome::Config),
            }
        } else {
            let codec = match b0 & 0x0f {
                7 => Codec::H264,
                12 => Codec::H265,
                other => return Ok(TagOutcome::Unsupported(UnsupportedCodec::Video(other))),
            };
            let header = tag.get(1..5).ok_or(FlvError::Truncated)?;
            (codec, header[0], si24(&header[1..4]), &tag[5..])
        };
        if frame_type == 5 {
            // Video info / command frame: no picture.
            return Ok(TagOutcome::Config);
        }
        match packet_type {
            0 => {
                let config = match codec {
                    Codec::H265 => parse_hvcc(body)?,
                    _ => parse_avcc(body)?,
                };
                self.video = Some(config);
                Ok(TagOutcome::Config)
            }
            1 => {
                let Some(config) = self.video.as_ref().filter(|c| c.codec == codec) else {
                    return Ok(TagOutcome::NoConfig);
                };
                let keyframe = frame_type == 1;
                let Some(data) = avcc_to_annexb(config, body, keyframe)? else {
                    return Ok(TagOutcome::Config);
                };
                let dts_ms = self.video_clock.unwrap(timestamp);
                Ok(TagOutcome::Frame(Frame {
                    codec,
                    dts: to_90k(dts_ms),
                    pts: to_90k(dts_ms + i64::from(cts)),
                    keyframe,
                    data,
                }))
            }
            _ => Ok(TagOutcome::Config),
        }
    }

    /// Converts an audio tag body received with RTMP timestamp `timestamp` (ms).
    ///
    /// # Errors
    /// An [`FlvError`] for a truncated tag or a bad AAC configuration.
    pub fn audio(&mut self, timestamp: u32, tag: &[u8]) -> Result<TagOutcome, FlvError> {
        let &b0 = tag.first().ok_or(FlvError::Truncated)?;
        let format = b0 >> 4;
        if format != 10 {
            return Ok(TagOutcome::Unsupported(UnsupportedCodec::Audio(format)));
        }
        let &packet_type = tag.get(1).ok_or(FlvError::Truncated)?;
        let body = &tag[2..];
        if packet_type == 0 {
            self.audio = Some(AudioSpecificConfig::parse(body)?);
            return Ok(TagOutcome::Config);
        }
        let Some(config) = self.audio else {
            return Ok(TagOutcome::NoConfig);
        };
        if body.is_empty() {
            return Ok(TagOutcome::Config);
        }
        let mut data = Vec::with_capacity(body.len() + 7);
        config.write_adts_header(body.len(), &mut data)?;
        data.extend_from_slice(body);
        let ts = to_90k(self.audio_clock.unwrap(timestamp));
        Ok(TagOutcome::Frame(Frame {
            codec: Codec::Aac,
            pts: ts,
            dts: ts,
            keyframe: true,
            data: Bytes::from(data),
        }))
    }
}

/// A signed 24-bit big-endian integer.
fn si24(b: &[u8]) -> i32 {
    let v = (i32::from(b[0]) << 16) | (i32::from(b[1]) << 8) | i32::from(b[2]);
    (v << 8) >> 8
}

const START_CODE: [u8; 4] = [0, 0, 0, 1];

/// Length-prefixed NAL units to Annex B; on keyframes the parameter sets go first (after
/// the publisher's access unit delimiter, if it sent one), unless the access unit
/// already carries its own. `None` when there are no NAL units.
fn avcc_to_annexb(
    config: &DecoderConfig,
    mut body: &[u8],
    keyframe: bool,
) -> Result<Option<Bytes>, FlvError> {
    let len_size = config.nal_length_size;
    let mut nals = Vec::new();
    while !body.is_empty() {
        let prefix = body.get(..len_size).ok_or(FlvError::Truncated)?;
        let len = prefix
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
        let rest = &body[len_size..];
        let nal = rest.get(..len).ok_or(FlvError::NalOverrun {
            len,
            left: rest.len(),
        })?;
        if !nal.is_empty() {
            nals.push(nal);
        }
        body = &rest[len..];
    }
    if nals.is_empty() {
        return Ok(None);
    }
    let has_own_params = nals.iter().any(|nal| config.is_parameter_set(nal));
    let mut out = Vec::with_capacity(
        nals.iter().map(|n| n.len() + 4).sum::<usize>() + config.annexb_parameter_sets.len(),
    );
    // A publisher's delimiter stays first: the parameter sets go after it.
    let delimiters = nals.iter().take_while(|n| config.is_delimiter(n)).count();
    for (i, nal) in nals.iter().enumerate() {
        if i == delimiters && keyframe && !has_own_params {
            out.extend_from_slice(&config.annexb_parameter_sets);
        }
        out.extend_from_slice(&START_CODE);
        out.extend_from_slice(nal);
    }
    Ok(Some(Bytes::from(out)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwrapper_follows_the_32_bit_wrap_both_ways() {
        let mut u = TimestampUnwrapper::default();
        assert_eq!(u.unwrap(0xffff_fff0), 0xffff_fff0);
        assert_eq!(u.unwrap(0x10), (1 << 32) + 0x10);
        assert_eq!(u.unwrap(0xffff_fff8), 0xffff_fff8);
        assert_eq!(u.unwrap(0x20), (1 << 32) + 0x20);
    }

    #[test]
    fn parameter_sets_go_after_a_publishers_delimiter() {
        let config = DecoderConfig {
            codec: Codec::H264,
            nal_length_size: 4,
            annexb_parameter_sets: vec![0, 0, 0, 1, 0x67, 0x42, 0, 0, 0, 1, 0x68, 0xce],
        };
        let body = [0, 0, 0, 2, 0x09, 0x10, 0, 0, 0, 2, 0x65, 0x88];
        let out = avcc_to_annexb(&config, &body, true)
            .expect("well formed")
            .expect("has nal units");
        assert_eq!(
            &out[..],
            &[
                0, 0, 0, 1, 0x09, 0x10, 0, 0, 0, 1, 0x67, 0x42, 0, 0, 0, 1, 0x68, 0xce, 0, 0, 0, 1,
                0x65, 0x88
            ][..]
        );
        // Without a delimiter the parameter sets lead.
        let out = avcc_to_annexb(&config, &body[6..], true)
            .expect("well formed")
            .expect("has nal units");
        assert_eq!(&out[..10], &config.annexb_parameter_sets[..10]);
    }

    #[test]
    fn negative_composition_time_wraps_the_pts() {
        assert_eq!(si24(&[0xff, 0xff, 0xd8]), -40);
        assert_eq!(to_90k(-40), PTS_MASK + 1 - 3600);
    }
}
