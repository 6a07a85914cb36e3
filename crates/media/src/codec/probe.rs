//! What a player needs to know about a stream, read from its frames: keyframes,
//! codec strings and video resolution, audio sample rate and channels.

use super::aac::AudioSpecificConfig;
use super::h264::H264Sps;
use super::h265::H265Sps;
use super::nal::{annexb_nals, h264_type, h265_type, H264_IDR, H264_SPS, H265_IRAP, H265_SPS};
use crate::{Codec, Frame};

/// A video stream's description, as the HLS master playlist and fMP4 init need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VideoInfo {
    /// H.264 or H.265.
    pub codec: Codec,
    /// RFC 6381 codec string (`avc1.64001f`, `hvc1.1.6.L93.B0`).
    pub codec_string: String,
    /// Displayed width in pixels.
    pub width: u32,
    /// Displayed height in pixels.
    pub height: u32,
}

/// An audio stream's description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AudioInfo {
    /// RFC 6381 codec string (`mp4a.40.2`).
    pub codec_string: String,
    /// Sampling rate in Hz.
    pub sample_rate: u32,
    /// Channel configuration (1 mono, 2 stereo, …).
    pub channels: u8,
}

/// True when the access unit is a random access point: an H.264 IDR slice, an H.265
/// IRAP picture (types 16..=23); every AAC frame is one.
pub fn is_keyframe(codec: Codec, annexb: &[u8]) -> bool {
    match codec {
        Codec::H264 => annexb_nals(annexb).any(|n| h264_type(n) == Some(H264_IDR)),
        Codec::H265 => {
            annexb_nals(annexb).any(|n| h265_type(n).is_some_and(|t| H265_IRAP.contains(&t)))
        }
        Codec::Aac => true,
    }
}

/// Reads the first valid SPS in a video frame (normally a keyframe).
pub fn probe_video(frame: &Frame) -> Option<VideoInfo> {
    annexb_nals(&frame.data).find_map(|nal| match frame.codec {
        Codec::H264 if h264_type(nal) == Some(H264_SPS) => {
            H264Sps::parse(nal).ok().map(|sps| VideoInfo {
                codec: Codec::H264,
                codec_string: sps.codec_string(),
                width: sps.width,
                height: sps.height,
            })
        }
        Codec::H265 if h265_type(nal) == Some(H265_SPS) => {
            H265Sps::parse(nal).ok().map(|sps| VideoInfo {
                codec: Codec::H265,
                codec_string: sps.codec_string(),
                width: sps.width,
                height: sps.height,
            })
        }
        _ => None,
    })
}

/// Reads the ADTS header at the start of an AAC frame.
pub fn probe_audio(frame: &Frame) -> Option<AudioInfo> {
    if frame.codec != Codec::Aac {
        return None;
    }
    let asc = AudioSpecificConfig::from_adts(&frame.data).ok()?;
    Some(AudioInfo {
        codec_string: asc.codec_string(),
        sample_rate: asc.sample_rate(),
        channels: asc.channels,
    })
}
