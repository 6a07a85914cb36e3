//! Access unit delimiters: the NAL unit that opens every video access unit carried in
//! MPEG-TS (ISO/IEC 13818-1 §2.14 for AVC, §2.17 for HEVC).
//!
//! Decoders and transmuxers that split a TS elementary stream into pictures look for
//! the delimiter (video.js' transmuxer, many TVs); an RTMP publish carries none (the FLV
//! container frames each picture itself). [`missing_delimiter`] gives the delimiter an
//! access unit lacks, so the TS muxer writes every picture with exactly one.
//!
//! The delimiter is a pure function of the access unit's bytes, so every node writes the
//! same one: the picture type is the narrowest that covers the slices present.

use super::bits::{rbsp, BitReader};
use super::nal::{annexb_nals, h264_type, h265_type, H265_IRAP};
use crate::Codec;

/// H.264 nal_unit_type of an access unit delimiter.
pub const H264_AUD: u8 = 9;
/// H.265 nal_unit_type of an access unit delimiter.
pub const H265_AUD: u8 = 35;

/// Bits of the H.264 slice kinds present in a picture (by `slice_type % 5`).
const P: u8 = 1 << 0;
const B: u8 = 1 << 1;
const I: u8 = 1 << 2;
const SP: u8 = 1 << 3;
const SI: u8 = 1 << 4;

/// The slice kinds each H.264 primary_pic_type allows (Table 7-5), by value.
const H264_PIC_TYPES: [u8; 8] = [
    I,
    I | P,
    I | P | B,
    SI,
    SI | SP,
    I | SI,
    I | SI | P | SP,
    I | SI | P | SP | B,
];

/// An access unit delimiter NAL unit behind its 4-byte start code (the first NAL unit
/// of an access unit takes the long form, Annex B.1.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delimiter {
    bytes: [u8; 7],
    len: usize,
}

impl Delimiter {
    /// The bytes to write before the access unit.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// The delimiter to write before the video access unit `au` (Annex B), or `None` when
/// it needs none: its first NAL unit is a delimiter already, it is not video, or it
/// does not start with a start code (then it is not a well-formed access unit, and a
/// delimiter in front would not make it one).
pub fn missing_delimiter(codec: Codec, au: &[u8]) -> Option<Delimiter> {
    let first = first_nal_header(au)?;
    match codec {
        Codec::H264 if h264_type(first) != Some(H264_AUD) => {
            let pic_type = h264_primary_pic_type(au);
            Some(Delimiter {
                bytes: [0, 0, 0, 1, H264_AUD, (pic_type << 5) | 0x10, 0],
                len: 6,
            })
        }
        Codec::H265 if h265_type(first) != Some(H265_AUD) => {
            let (pic_type, temporal_id_plus1) = h265_pic_type(au);
            Some(Delimiter {
                bytes: [
                    0,
                    0,
                    0,
                    1,
                    H265_AUD << 1,
                    temporal_id_plus1,
                    (pic_type << 5) | 0x10,
                ],
                len: 7,
            })
        }
        _ => None,
    }
}

/// The first bytes of the NAL unit after the leading start code, when `au` starts with
/// one (zero bytes, then `00 00 01`).
fn first_nal_header(au: &[u8]) -> Option<&[u8]> {
    let zeros = au.iter().take_while(|&&b| b == 0).count();
    if zeros < 2 || au.get(zeros) != Some(&1) {
        return None;
    }
    au.get(zeros + 1..).filter(|rest| !rest.is_empty())
}

/// The narrowest primary_pic_type covering every slice of the picture; 7 (any) when a
/// slice header cannot be read or there is no slice.
fn h264_primary_pic_type(au: &[u8]) -> u8 {
    let mut present = 0u8;
    for nal in annexb_nals(au) {
        // Slices and data partition A carry a slice header; partitions B and C do not.
        if matches!(h264_type(nal), Some(1 | 2 | 5)) {
            match h264_slice_kind(nal) {
                Some(kind) => present |= 1 << kind,
                None => return 7,
            }
        }
    }
    if present == 0 {
        return 7;
    }
    H264_PIC_TYPES
        .iter()
        .position(|&allowed| present & !allowed == 0)
        .map_or(7, |p| p as u8)
}

/// `slice_type % 5` of an H.264 slice NAL unit (0 P, 1 B, 2 I, 3 SP, 4 SI).
fn h264_slice_kind(nal: &[u8]) -> Option<u8> {
    // first_mb_in_slice and slice_type are two exp-Golomb codes of at most 32 bits
    // each, well inside the first 16 bytes after the header.
    let head = rbsp(nal.get(1..nal.len().min(17))?);
    let mut r = BitReader::new(&head);
    r.ue().ok()?;
    let slice_type = r.ue().ok()?;
    (slice_type <= 9).then_some((slice_type % 5) as u8)
}

/// The H.265 pic_type (0: I only, for an IRAP picture; else 2: B, P or I) and the
/// picture's nuh_temporal_id_plus1, which its delimiter must share.
fn h265_pic_type(au: &[u8]) -> (u8, u8) {
    let mut irap_only = true;
    let mut temporal_id_plus1 = None;
    for nal in annexb_nals(au) {
        let Some(t) = h265_type(nal) else { continue };
        if t > 31 {
            continue;
        }
        irap_only &= H265_IRAP.contains(&t);
        if temporal_id_plus1.is_none() {
            temporal_id_plus1 = nal.get(1).map(|b| b & 0x07).filter(|&v| v > 0);
        }
    }
    let tid = temporal_id_plus1.unwrap_or(1);
    match temporal_id_plus1 {
        Some(_) if irap_only => (0, tid),
        _ => (2, tid),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An H.264 slice NAL unit: first_mb_in_slice 0 ('1'), then slice_type as ue(v).
    fn h264_slice(nal_type: u8, slice_type: u8) -> Vec<u8> {
        // ue(v) of 0..=9 after a leading '1' bit, left-aligned in a u16.
        let code = u32::from(slice_type) + 1;
        let len = 32 - code.leading_zeros();
        let bits = 2 * len - 1;
        let value = (1u32 << 31) | (code << (31 - bits));
        let b = value.to_be_bytes();
        vec![0, 0, 0, 1, 0x60 | nal_type, b[0], b[1] | 0x01, 0x80, 0x42]
    }

    fn delimiter(codec: Codec, au: &[u8]) -> Option<Vec<u8>> {
        missing_delimiter(codec, au).map(|d| d.as_bytes().to_vec())
    }

    #[test]
    fn an_idr_picture_gets_an_i_delimiter_before_its_parameter_sets() {
        let mut au = vec![
            0, 0, 0, 1, 0x67, 0x42, 0, 0x1e, 0, 0, 0, 1, 0x68, 0xce, 0x3c,
        ];
        au.extend(h264_slice(5, 7));
        assert_eq!(
            delimiter(Codec::H264, &au),
            Some(vec![0, 0, 0, 1, 0x09, 0x10])
        );
    }

    #[test]
    fn the_pic_type_covers_every_slice_of_the_picture() {
        let p = h264_slice(1, 5);
        let b = h264_slice(1, 1);
        let i = h264_slice(1, 2);
        assert_eq!(delimiter(Codec::H264, &p).unwrap()[5], (1 << 5) | 0x10);
        assert_eq!(
            delimiter(Codec::H264, &[p.clone(), b].concat()).unwrap()[5],
            (2 << 5) | 0x10
        );
        assert_eq!(
            delimiter(Codec::H264, &[i, p].concat()).unwrap()[5],
            (1 << 5) | 0x10
        );
        // An SI slice with a P slice: 6 is the narrowest type that allows both.
        let si = h264_slice(1, 4);
        let p = h264_slice(1, 0);
        assert_eq!(
            delimiter(Codec::H264, &[si, p].concat()).unwrap()[5],
            (6 << 5) | 0x10
        );
    }

    #[test]
    fn an_access_unit_with_a_delimiter_gets_no_second_one() {
        let mut au = vec![0, 0, 0, 1, 0x09, 0xf0];
        au.extend(h264_slice(5, 7));
        assert_eq!(missing_delimiter(Codec::H264, &au), None);
        // A three-byte start code counts the same.
        assert_eq!(missing_delimiter(Codec::H264, &au[1..]), None);
        let hevc = [0, 0, 0, 1, 0x46, 0x01, 0x50, 0, 0, 1, 0x26, 0x01, 0xaf];
        assert_eq!(missing_delimiter(Codec::H265, &hevc), None);
    }

    #[test]
    fn an_unreadable_slice_header_gives_the_any_type() {
        let au = [0, 0, 0, 1, 0x41, 0x00, 0x00, 0x00];
        assert_eq!(delimiter(Codec::H264, &au).unwrap()[5], 0xf0);
    }

    #[test]
    fn hevc_delimiters_carry_the_pictures_temporal_id() {
        // IDR_W_RADL (19) with nuh_temporal_id_plus1 1: an I picture.
        let idr = [
            0, 0, 0, 1, 0x40, 0x01, 0x0c, 0, 0, 0, 1, 0x26, 0x01, 0xaf, 0x10,
        ];
        assert_eq!(
            delimiter(Codec::H265, &idr),
            Some(vec![0, 0, 0, 1, 0x46, 0x01, 0x10])
        );
        // TRAIL_R (1) at temporal id 2 (plus1 = 3): any slice type.
        let trail = [0, 0, 0, 1, 0x02, 0x03, 0xd0, 0x20];
        assert_eq!(
            delimiter(Codec::H265, &trail),
            Some(vec![0, 0, 0, 1, 0x46, 0x03, 0x50])
        );
    }

    #[test]
    fn audio_and_bytes_without_a_start_code_get_none() {
        assert_eq!(missing_delimiter(Codec::Aac, &[0, 0, 1, 0x65]), None);
        assert_eq!(missing_delimiter(Codec::H264, &[0x65, 0x88]), None);
        assert_eq!(missing_delimiter(Codec::H264, &[0, 0, 1]), None);
        assert_eq!(missing_delimiter(Codec::H264, &[]), None);
    }
}
