//! What an init segment describes, read from the frames: the video parameter sets with
//! the fields the decoder configuration records need, and the AAC configuration.

use bytes::Bytes;

use super::Fmp4Error;
use crate::codec::aac::AudioSpecificConfig;
use crate::codec::bits::{rbsp, BitReader, BitsError};
use crate::codec::h264::H264Sps;
use crate::codec::h265::{H265Sps, ProfileTierLevel};
use crate::codec::nal::{annexb_nals, h264_type, h265_type};
use crate::{Codec, Frame, TrackKind};

/// H.264 nal_unit_type of a picture parameter set.
const H264_PPS: u8 = 8;
/// H.265 nal_unit_types of the VPS, SPS and PPS.
const H265_VPS: u8 = 32;
const H265_SPS: u8 = 33;
const H265_PPS: u8 = 34;

/// The video track of an init segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VideoTrack {
    /// H.264 or H.265.
    pub codec: Codec,
    /// Displayed width in pixels (from the SPS).
    pub width: u32,
    /// Displayed height in pixels (from the SPS).
    pub height: u32,
    /// RFC 6381 codec string, for playlists and the MPD.
    pub codec_string: String,
    /// H.265 only: the VPS NAL units (header included, emulation prevention kept).
    pub vps: Vec<Bytes>,
    /// The SPS NAL units.
    pub sps: Vec<Bytes>,
    /// The PPS NAL units.
    pub pps: Vec<Bytes>,
    /// Fields of the first SPS the configuration records repeat.
    pub(crate) sps_fields: SpsFields,
}

/// SPS fields for `avcC`/`hvcC` that the codec probes do not expose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct SpsFields {
    pub(crate) chroma_format_idc: u8,
    pub(crate) bit_depth_luma_minus8: u8,
    pub(crate) bit_depth_chroma_minus8: u8,
    /// H.265: sps_max_sub_layers_minus1 + 1.
    pub(crate) temporal_layers: u8,
    /// H.265: sps_temporal_id_nesting_flag.
    pub(crate) temporal_id_nested: bool,
    /// H.265: the general profile, tier and level.
    pub(crate) ptl: Option<ProfileTierLevel>,
}

/// The audio track of an init segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AudioTrack {
    /// The AAC configuration (from the first ADTS header).
    pub config: AudioSpecificConfig,
}

impl AudioTrack {
    /// Sampling rate in Hz.
    pub fn sample_rate(&self) -> u32 {
        self.config.sample_rate()
    }

    /// The 2-byte AudioSpecificConfig that `esds` carries.
    pub fn audio_specific_config(&self) -> [u8; 2] {
        let c = &self.config;
        [
            (c.object_type << 3) | (c.sample_rate_index >> 1),
            ((c.sample_rate_index & 1) << 7) | ((c.channels & 0x0f) << 3),
        ]
    }
}

/// The tracks one init segment (and the fragments that go with it) carries.
///
/// Two configs are equal exactly when their init segments are byte-identical, so a
/// caller re-derives the config at each keyframe (or discontinuity) and writes a new
/// init (a new EXT-X-MAP, a new DASH period) when it changed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InitConfig {
    /// The video track, if packaged.
    pub video: Option<VideoTrack>,
    /// The audio track, if packaged.
    pub audio: Option<AudioTrack>,
}

impl InitConfig {
    /// Reads the tracks from frames: the video track from the first video frame that
    /// carries an SPS (a keyframe), the audio track from the first AAC frame.
    ///
    /// # Errors
    /// [`Fmp4Error::NoParameterSets`] when there is video but no frame carries a complete
    /// set of parameter sets, [`Fmp4Error::BadParameterSet`] when the SPS does not
    /// parse, [`Fmp4Error::BadAudioConfig`] when the first AAC frame has no ADTS header,
    /// [`Fmp4Error::Empty`] when there are no frames at all.
    pub fn from_frames<'a>(frames: impl IntoIterator<Item = &'a Frame>) -> Result<Self, Fmp4Error> {
        let mut video_codec = None;
        let mut video = None;
        let mut audio = None;
        for frame in frames {
            match frame.kind() {
                TrackKind::Video if video.is_none() => {
                    video_codec = Some(frame.codec);
                    video = VideoTrack::from_frame(frame)?;
                }
                TrackKind::Audio if audio.is_none() => {
                    let config = AudioSpecificConfig::from_adts(&frame.data)
                        .map_err(|_| Fmp4Error::BadAudioConfig)?;
                    audio = Some(AudioTrack { config });
                }
                _ => {}
            }
            if video.is_some() && audio.is_some() {
                break;
            }
        }
        if let (Some(codec), None) = (video_codec, &video) {
            return Err(Fmp4Error::NoParameterSets(codec));
        }
        if video.is_none() && audio.is_none() {
            return Err(Fmp4Error::Empty);
        }
        Ok(Self { video, audio })
    }

    /// This config with the video track only (DASH adaptation set, video-only HLS).
    pub fn video_only(&self) -> Self {
        Self {
            video: self.video.clone(),
            audio: None,
        }
    }

    /// This config with the audio track only.
    pub fn audio_only(&self) -> Self {
        Self {
            video: None,
            audio: self.audio,
        }
    }

    /// The number of tracks (0, 1 or 2).
    pub fn track_count(&self) -> usize {
        usize::from(self.video.is_some()) + usize::from(self.audio.is_some())
    }

    /// Whether frames of this kind are packaged.
    pub fn carries(&self, kind: TrackKind) -> bool {
        match kind {
            TrackKind::Video => self.video.is_some(),
            TrackKind::Audio => self.audio.is_some(),
        }
    }
}

impl VideoTrack {
    /// The track from one access unit, or `None` when it lacks a parameter set.
    ///
    /// # Errors
    /// [`Fmp4Error::BadParameterSet`] when the SPS does not parse.
    pub fn from_frame(frame: &Frame) -> Result<Option<Self>, Fmp4Error> {
        let (mut vps, mut sps, mut pps) = (Vec::new(), Vec::new(), Vec::new());
        for nal in annexb_nals(&frame.data) {
            let list = match frame.codec {
                Codec::H264 => match h264_type(nal) {
                    Some(crate::codec::nal::H264_SPS) => &mut sps,
                    Some(H264_PPS) => &mut pps,
                    _ => continue,
                },
                Codec::H265 => match h265_type(nal) {
                    Some(H265_VPS) => &mut vps,
                    Some(H265_SPS) => &mut sps,
                    Some(H265_PPS) => &mut pps,
                    _ => continue,
                },
                Codec::Aac => return Ok(None),
            };
            let nal = frame.data.slice_ref(nal);
            if !list.contains(&nal) {
                list.push(nal);
            }
        }
        let needs_vps = frame.codec == Codec::H265;
        let (Some(first_sps), false, false) =
            (sps.first(), pps.is_empty(), needs_vps && vps.is_empty())
        else {
            return Ok(None);
        };
        let bad = |reason: String| Fmp4Error::BadParameterSet {
            codec: frame.codec,
            reason,
        };
        let (width, height, codec_string, sps_fields) = if frame.codec == Codec::H264 {
            let parsed = H264Sps::parse(first_sps).map_err(|e| bad(e.to_string()))?;
            let fields = h264_fields(first_sps).map_err(|e| bad(e.to_string()))?;
            (parsed.width, parsed.height, parsed.codec_string(), fields)
        } else {
            let parsed = H265Sps::parse(first_sps).map_err(|e| bad(e.to_string()))?;
            let mut fields = h265_fields(first_sps).map_err(|e| bad(e.to_string()))?;
            fields.ptl = Some(parsed.ptl);
            (parsed.width, parsed.height, parsed.codec_string(), fields)
        };
        Ok(Some(Self {
            codec: frame.codec,
            width,
            height,
            codec_string,
            vps,
            sps,
            pps,
            sps_fields,
        }))
    }
}

/// H.264 SPS (7.3.2.1.1): chroma format and bit depths (present for the high profiles).
fn h264_fields(nal: &[u8]) -> Result<SpsFields, BitsError> {
    let data = rbsp(nal);
    let mut r = BitReader::new(&data);
    r.u8()?; // nal header
    let profile_idc = r.u8()?;
    r.skip(16)?; // constraint flags, level_idc
    r.ue()?; // seq_parameter_set_id
    let mut fields = SpsFields {
        chroma_format_idc: 1,
        temporal_layers: 1,
        ..SpsFields::default()
    };
    if matches!(
        profile_idc,
        100 | 110 | 122 | 244 | 44 | 83 | 86 | 118 | 128 | 138 | 139 | 134 | 135
    ) {
        let chroma = r.ue()?;
        if chroma == 3 {
            r.bit()?; // separate_colour_plane_flag
        }
        fields.chroma_format_idc = (chroma & 0x03) as u8;
        fields.bit_depth_luma_minus8 = (r.ue()? & 0x07) as u8;
        fields.bit_depth_chroma_minus8 = (r.ue()? & 0x07) as u8;
    }
    Ok(fields)
}

/// H.265 SPS (7.3.2.2.1): sub-layers, nesting, chroma format and bit depths.
fn h265_fields(nal: &[u8]) -> Result<SpsFields, BitsError> {
    let data = rbsp(nal);
    let mut r = BitReader::new(&data);
    r.skip(16)?; // nal header
    r.skip(4)?; // sps_video_parameter_set_id
    let max_sub_layers_minus1 = r.bits(3)? as usize;
    let temporal_id_nested = r.bit()?;
    // profile_tier_level(1, max_sub_layers_minus1): the general part is 88 + 8 bits.
    r.skip(96)?;
    let mut present = [(false, false); 7];
    for p in present.iter_mut().take(max_sub_layers_minus1) {
        *p = (r.bit()?, r.bit()?);
    }
    if max_sub_layers_minus1 > 0 {
        r.skip(2 * (8 - max_sub_layers_minus1))?;
    }
    for &(profile, level) in present.iter().take(max_sub_layers_minus1) {
        if profile {
            r.skip(88)?;
        }
        if level {
            r.skip(8)?;
        }
    }
    r.ue()?; // sps_seq_parameter_set_id
    let chroma = r.ue()?;
    if chroma == 3 {
        r.bit()?;
    }
    r.ue()?; // pic_width_in_luma_samples
    r.ue()?; // pic_height_in_luma_samples
    if r.bit()? {
        for _ in 0..4 {
            r.ue()?;
        }
    }
    Ok(SpsFields {
        chroma_format_idc: (chroma & 0x03) as u8,
        bit_depth_luma_minus8: (r.ue()? & 0x07) as u8,
        bit_depth_chroma_minus8: (r.ue()? & 0x07) as u8,
        temporal_layers: max_sub_layers_minus1 as u8 + 1,
        temporal_id_nested,
        ptl: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn annexb(nals: &[&[u8]]) -> Bytes {
        let mut d = Vec::new();
        for n in nals {
            d.extend_from_slice(&[0, 0, 0, 1]);
            d.extend_from_slice(n);
        }
        Bytes::from(d)
    }

    // libx264 baseline 640x360 SPS (also in codec::h264's tests).
    const SPS_640: [u8; 25] = [
        0x67, 0x42, 0xc0, 0x1e, 0xd9, 0x00, 0xa0, 0x2f, 0xf9, 0x70, 0x11, 0x00, 0x00, 0x03, 0x00,
        0x01, 0x00, 0x00, 0x03, 0x00, 0x32, 0x0f, 0x16, 0x2e, 0x48,
    ];

    #[test]
    fn h264_track_from_a_keyframe() {
        let frame = Frame {
            codec: Codec::H264,
            pts: 0,
            dts: 0,
            keyframe: true,
            data: annexb(&[
                &[0x09, 0xf0],
                &SPS_640,
                &[0x68, 0xce, 0x38, 0x80],
                &[0x65, 1, 2],
            ]),
        };
        let config = InitConfig::from_frames([&frame]).unwrap();
        let video = config.video.unwrap();
        assert_eq!((video.width, video.height), (640, 360));
        assert_eq!(video.codec_string, "avc1.42c01e");
        assert_eq!(video.sps, vec![Bytes::from_static(&SPS_640)]);
        assert_eq!(
            video.pps,
            vec![Bytes::from_static(&[0x68, 0xce, 0x38, 0x80])]
        );
        assert_eq!(video.sps_fields.chroma_format_idc, 1);
        assert!(config.audio.is_none());
    }

    #[test]
    fn video_without_parameter_sets_is_an_error() {
        let frame = Frame {
            codec: Codec::H265,
            pts: 0,
            dts: 0,
            keyframe: false,
            data: annexb(&[&[0x02, 0x01, 0xaa]]),
        };
        assert_eq!(
            InitConfig::from_frames([&frame]),
            Err(Fmp4Error::NoParameterSets(Codec::H265))
        );
        assert_eq!(InitConfig::from_frames([]), Err(Fmp4Error::Empty));
    }

    #[test]
    fn audio_specific_config_round_trips() {
        let config = AudioSpecificConfig::parse(&[0x11, 0x90]).unwrap();
        let track = AudioTrack { config };
        assert_eq!(track.audio_specific_config(), [0x11, 0x90]);
        assert_eq!(track.sample_rate(), 48_000);
    }
}
