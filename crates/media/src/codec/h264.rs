//! H.264 sequence parameter set: what the codec string and the resolution need.

use thiserror::Error;

use super::bits::{rbsp, BitReader, BitsError};

/// Why an H.264 SPS could not be read.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum H264Error {
    /// The bitstream ended early or held an invalid code.
    #[error("h264 sps: {0}")]
    Bits(#[from] BitsError),
    /// The NAL unit is not a sequence parameter set.
    #[error("not an h264 sps (nal type {0})")]
    NotSps(u8),
    /// A field holds a value outside its legal range.
    #[error("h264 sps field {0} out of range")]
    Range(&'static str),
}

/// The fields of an H.264 SPS that packaging needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct H264Sps {
    /// profile_idc (66 baseline, 77 main, 100 high, …).
    pub profile_idc: u8,
    /// The byte of constraint_set0..5 flags and reserved bits.
    pub constraint_flags: u8,
    /// level_idc (e.g. 31 for level 3.1).
    pub level_idc: u8,
    /// Displayed width in pixels (after cropping).
    pub width: u32,
    /// Displayed height in pixels (after cropping).
    pub height: u32,
}

/// Profiles whose SPS carries chroma format, bit depths and scaling lists.
const HIGH_PROFILES: [u8; 13] = [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135];

impl H264Sps {
    /// Parses an SPS NAL unit (header byte included, emulation prevention not yet removed).
    ///
    /// # Errors
    /// [`H264Error`] when the NAL is not an SPS or is truncated or out of range.
    pub fn parse(nal: &[u8]) -> Result<Self, H264Error> {
        let data = rbsp(nal);
        let mut r = BitReader::new(&data);
        let header = r.u8()?;
        if header & 0x1f != 7 {
            return Err(H264Error::NotSps(header & 0x1f));
        }
        let profile_idc = r.u8()?;
        let constraint_flags = r.u8()?;
        let level_idc = r.u8()?;
        r.ue()?; // seq_parameter_set_id
        let mut chroma_format_idc = 1;
        let mut separate_colour_plane = false;
        if HIGH_PROFILES.contains(&profile_idc) {
            chroma_format_idc = r.ue()?;
            if chroma_format_idc > 3 {
                return Err(H264Error::Range("chroma_format_idc"));
            }
            if chroma_format_idc == 3 {
                separate_colour_plane = r.bit()?;
            }
            r.ue()?; // bit_depth_luma_minus8
            r.ue()?; // bit_depth_chroma_minus8
            r.bit()?; // qpprime_y_zero_transform_bypass_flag
            if r.bit()? {
                let lists = if chroma_format_idc == 3 { 12 } else { 8 };
                for i in 0..lists {
                    if r.bit()? {
                        skip_scaling_list(&mut r, if i < 6 { 16 } else { 64 })?;
                    }
                }
            }
        }
        r.ue()?; // log2_max_frame_num_minus4
        match r.ue()? {
            0 => {
                r.ue()?; // log2_max_pic_order_cnt_lsb_minus4
            }
            1 => {
                r.bit()?; // delta_pic_order_always_zero_flag
                r.se()?; // offset_for_non_ref_pic
                r.se()?; // offset_for_top_to_bottom_field
                let cycle = r.ue()?;
                if cycle > 255 {
                    return Err(H264Error::Range("num_ref_frames_in_pic_order_cnt_cycle"));
                }
                for _ in 0..cycle {
                    r.se()?;
                }
            }
            _ => {}
        }
        r.ue()?; // max_num_ref_frames
        r.bit()?; // gaps_in_frame_num_value_allowed_flag
        let width_mbs = u64::from(r.ue()?) + 1;
        let height_map_units = u64::from(r.ue()?) + 1;
        let frame_mbs_only = r.bit()?;
        if !frame_mbs_only {
            r.bit()?; // mb_adaptive_frame_field_flag
        }
        r.bit()?; // direct_8x8_inference_flag
        let crop = if r.bit()? {
            [r.ue()?, r.ue()?, r.ue()?, r.ue()?].map(u64::from)
        } else {
            [0; 4]
        };
        let field_factor = if frame_mbs_only { 1 } else { 2 };
        let (crop_x, crop_y) = match (separate_colour_plane, chroma_format_idc) {
            (true, _) | (false, 0) => (1, field_factor),
            (false, 1) => (2, 2 * field_factor),
            (false, 2) => (2, field_factor),
            (false, _) => (1, field_factor),
        };
        let width = (width_mbs * 16)
            .checked_sub(crop_x * (crop[0] + crop[1]))
            .ok_or(H264Error::Range("frame_crop_left/right"))?;
        let height = (height_map_units * 16 * field_factor)
            .checked_sub(crop_y * (crop[2] + crop[3]))
            .ok_or(H264Error::Range("frame_crop_top/bottom"))?;
        Ok(H264Sps {
            profile_idc,
            constraint_flags,
            level_idc,
            width: u32::try_from(width).map_err(|_| H264Error::Range("width"))?,
            height: u32::try_from(height).map_err(|_| H264Error::Range("height"))?,
        })
    }

    /// The RFC 6381 codec string, `avc1.PPCCLL` (hex profile, constraints, level).
    pub fn codec_string(&self) -> String {
        format!(
            "avc1.{:02x}{:02x}{:02x}",
            self.profile_idc, self.constraint_flags, self.level_idc
        )
    }
}

/// Skips a scaling_list() of `size` coefficients (H.264 7.3.2.1.1.1).
fn skip_scaling_list(r: &mut BitReader<'_>, size: usize) -> Result<(), BitsError> {
    let mut last = 8i64;
    let mut next = 8i64;
    for _ in 0..size {
        if next != 0 {
            let delta = i64::from(r.se()?);
            next = (last + delta).rem_euclid(256);
        }
        if next != 0 {
            last = next;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    // SPS NAL units written by libx264 (ffmpeg 5), with ffprobe's view of each stream.

    #[test]
    fn baseline_640x360_with_cropping() {
        // 40x23 macroblocks, 8 lines cropped at the bottom.
        let sps = [
            0x67, 0x42, 0xc0, 0x1e, 0xd9, 0x00, 0xa0, 0x2f, 0xf9, 0x70, 0x11, 0x00, 0x00, 0x03,
            0x00, 0x01, 0x00, 0x00, 0x03, 0x00, 0x32, 0x0f, 0x16, 0x2e, 0x48,
        ];
        let sps = H264Sps::parse(&sps).unwrap();
        assert_eq!((sps.width, sps.height), (640, 360));
        assert_eq!(sps.codec_string(), "avc1.42c01e");
    }

    #[test]
    fn high_422_with_scaling_lists_and_odd_size() {
        // -pix_fmt yuv422p -profile:v high422 -x264-params cqm=jvt, 322x182.
        let sps = [
            0x67, 0x7a, 0x00, 0x0d, 0xbc, 0xd9, 0x41, 0x51, 0x9e, 0x22, 0x2f, 0x01, 0x10, 0x00,
            0x00, 0x03, 0x00, 0x10, 0x00, 0x00, 0x03, 0x03, 0x20, 0xf1, 0x42, 0x99, 0x60,
        ];
        let sps = H264Sps::parse(&sps).unwrap();
        assert_eq!((sps.width, sps.height), (322, 182));
        assert_eq!(sps.codec_string(), "avc1.7a000d");
    }

    #[test]
    fn interlaced_pal() {
        // -flags +ildct, 720x576: frame_mbs_only_flag = 0, so heights count field pairs.
        let sps = [
            0x67, 0x64, 0x00, 0x1e, 0xac, 0xd9, 0x40, 0xb4, 0x24, 0xd8, 0x08, 0x80, 0x00, 0x00,
            0x03, 0x00, 0x80, 0x00, 0x00, 0x19, 0x0f, 0x8a, 0x14, 0xcb,
        ];
        let sps = H264Sps::parse(&sps).unwrap();
        assert_eq!((sps.width, sps.height), (720, 576));
        assert_eq!(sps.codec_string(), "avc1.64001e");
    }

    #[test]
    fn non_sps_and_truncation_are_errors() {
        assert_eq!(H264Sps::parse(&[0x68, 0]), Err(H264Error::NotSps(8)));
        assert!(H264Sps::parse(&[0x67, 0x64, 0, 0x1f]).is_err());
    }
}
