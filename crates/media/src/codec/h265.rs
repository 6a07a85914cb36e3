//! H.265 sequence parameter set: profile_tier_level for the codec string, and the
//! resolution with its conformance window.

use std::fmt::Write as _;

use thiserror::Error;

use super::bits::{rbsp, BitReader, BitsError};

/// Why an H.265 SPS could not be read.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum H265Error {
    /// The bitstream ended early or held an invalid code.
    #[error("h265 sps: {0}")]
    Bits(#[from] BitsError),
    /// The NAL unit is not a sequence parameter set.
    #[error("not an h265 sps (nal type {0})")]
    NotSps(u8),
    /// A field holds a value outside its legal range.
    #[error("h265 sps field {0} out of range")]
    Range(&'static str),
}

/// The general profile_tier_level fields (H.265 7.3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProfileTierLevel {
    /// general_profile_space (0 in every deployed stream).
    pub profile_space: u8,
    /// general_tier_flag: false = Main tier, true = High tier.
    pub high_tier: bool,
    /// general_profile_idc (1 Main, 2 Main 10, …).
    pub profile_idc: u8,
    /// general_profile_compatibility_flag[0..32], flag j in bit 31 − j.
    pub compatibility_flags: u32,
    /// The 48 bits from general_progressive_source_flag to the end of the constraints.
    pub constraint_flags: [u8; 6],
    /// general_level_idc (30 × the level, e.g. 93 for 3.1).
    pub level_idc: u8,
}

/// The fields of an H.265 SPS that packaging needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct H265Sps {
    /// The general profile, tier and level.
    pub ptl: ProfileTierLevel,
    /// Displayed width in pixels (after the conformance window).
    pub width: u32,
    /// Displayed height in pixels (after the conformance window).
    pub height: u32,
}

impl H265Sps {
    /// Parses an SPS NAL unit (2-byte header included, emulation prevention not yet
    /// removed).
    ///
    /// # Errors
    /// [`H265Error`] when the NAL is not an SPS or is truncated or out of range.
    pub fn parse(nal: &[u8]) -> Result<Self, H265Error> {
        let data = rbsp(nal);
        let mut r = BitReader::new(&data);
        let header = r.bits(16)?;
        let nal_type = ((header >> 9) & 0x3f) as u8;
        if nal_type != 33 {
            return Err(H265Error::NotSps(nal_type));
        }
        r.bits(4)?; // sps_video_parameter_set_id
        let max_sub_layers_minus1 = r.bits(3)? as usize;
        r.bit()?; // sps_temporal_id_nesting_flag
        let ptl = profile_tier_level(&mut r, max_sub_layers_minus1)?;
        r.ue()?; // sps_seq_parameter_set_id
        let chroma_format_idc = r.ue()?;
        if chroma_format_idc > 3 {
            return Err(H265Error::Range("chroma_format_idc"));
        }
        let separate_colour_plane = chroma_format_idc == 3 && r.bit()?;
        let width = u64::from(r.ue()?);
        let height = u64::from(r.ue()?);
        let window = if r.bit()? {
            [r.ue()?, r.ue()?, r.ue()?, r.ue()?].map(u64::from)
        } else {
            [0; 4]
        };
        let (sub_w, sub_h) = match (separate_colour_plane, chroma_format_idc) {
            (false, 1) => (2, 2),
            (false, 2) => (2, 1),
            _ => (1, 1),
        };
        let width = width
            .checked_sub(sub_w * (window[0] + window[1]))
            .ok_or(H265Error::Range("conf_win_left/right_offset"))?;
        let height = height
            .checked_sub(sub_h * (window[2] + window[3]))
            .ok_or(H265Error::Range("conf_win_top/bottom_offset"))?;
        Ok(H265Sps {
            ptl,
            width: u32::try_from(width).map_err(|_| H265Error::Range("width"))?,
            height: u32::try_from(height).map_err(|_| H265Error::Range("height"))?,
        })
    }

    /// The codec string of ISO/IEC 14496-15 annex E, e.g. `hvc1.1.6.L93.B0`.
    pub fn codec_string(&self) -> String {
        let p = &self.ptl;
        let space = match p.profile_space {
            1 => "A",
            2 => "B",
            3 => "C",
            _ => "",
        };
        let mut s = format!(
            "hvc1.{space}{}.{:x}.{}{}",
            p.profile_idc,
            p.compatibility_flags.reverse_bits(),
            if p.high_tier { 'H' } else { 'L' },
            p.level_idc
        );
        let used = p
            .constraint_flags
            .iter()
            .rposition(|&b| b != 0)
            .map_or(0, |i| i + 1);
        for b in &p.constraint_flags[..used] {
            // Writing to a String cannot fail.
            let _ = write!(s, ".{b:X}");
        }
        s
    }
}

/// Reads profile_tier_level(1, max_sub_layers_minus1), keeping the general part.
fn profile_tier_level(
    r: &mut BitReader<'_>,
    max_sub_layers_minus1: usize,
) -> Result<ProfileTierLevel, BitsError> {
    let profile_space = r.bits(2)? as u8;
    let high_tier = r.bit()?;
    let profile_idc = r.bits(5)? as u8;
    let compatibility_flags = r.bits(32)?;
    let mut constraint_flags = [0u8; 6];
    for b in &mut constraint_flags {
        *b = r.u8()?;
    }
    let level_idc = r.u8()?;
    let mut present = [(false, false); 7];
    for p in present.iter_mut().take(max_sub_layers_minus1) {
        *p = (r.bit()?, r.bit()?);
    }
    if max_sub_layers_minus1 > 0 {
        r.skip(2 * (8 - max_sub_layers_minus1))?; // reserved_zero_2bits
    }
    for &(profile, level) in present.iter().take(max_sub_layers_minus1) {
        if profile {
            r.skip(88)?;
        }
        if level {
            r.skip(8)?;
        }
    }
    Ok(ProfileTierLevel {
        profile_space,
        high_tier,
        profile_idc,
        compatibility_flags,
        constraint_flags,
        level_idc,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn main10_1080p_with_conformance_window() {
        // libx265 -pix_fmt yuv420p10le, 1920x1080 (coded 1920x1088); ffprobe: Main 10, level 120.
        let sps = [
            0x42, 0x01, 0x01, 0x02, 0x20, 0x00, 0x00, 0x03, 0x00, 0x90, 0x00, 0x00, 0x03, 0x00,
            0x00, 0x03, 0x00, 0x78, 0xa0, 0x03, 0xc0, 0x80, 0x10, 0xe4, 0xd9, 0x65, 0x66, 0x92,
            0x4c, 0xaf, 0x01, 0x68, 0x08, 0x00, 0x00, 0x03, 0x00, 0x08, 0x00, 0x00, 0x03, 0x00,
            0xc8, 0x40,
        ];
        let sps = H265Sps::parse(&sps).unwrap();
        assert_eq!((sps.width, sps.height), (1920, 1080));
        assert_eq!(sps.codec_string(), "hvc1.2.4.L120.90");
    }

    #[test]
    fn codec_string_follows_annex_e() {
        let sps = H265Sps {
            ptl: ProfileTierLevel {
                profile_space: 0,
                high_tier: true,
                profile_idc: 1,
                compatibility_flags: 0x6000_0000,
                constraint_flags: [0xb0, 0, 0, 0, 0x01, 0],
                level_idc: 93,
            },
            width: 0,
            height: 0,
        };
        assert_eq!(sps.codec_string(), "hvc1.1.6.H93.B0.0.0.0.1");
    }

    #[test]
    fn non_sps_and_truncation_are_errors() {
        assert_eq!(H265Sps::parse(&[0x40, 0x01, 0]), Err(H265Error::NotSps(32)));
        assert!(H265Sps::parse(&[0x42, 0x01, 0x01, 0x01]).is_err());
    }
}
